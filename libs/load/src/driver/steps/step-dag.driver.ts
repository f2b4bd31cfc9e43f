import { Pool } from 'undici';
import {
  resolvedAssertions,
  type ErrorClass,
  type HttpScenario,
  type Step,
  type ToolCallObservation,
} from '@fathom/contracts';
import { classifyError, errorText } from '../error-class.util';
import type { DriverOptions, HttpTarget } from '../openai-chat.driver';
import type { DriverOutcome, DriverRequest, RequestDriver, StepRun } from '../request-outcome';
import { targetPath } from '../target-url.util';
import { GrpcStepClient } from './grpc-step.client';
import { HttpStepClient } from './http-step.client';
import { compileAssertion, type CompiledAssertion } from './step-assertion.evaluator';
import type { StepAnswer, StepClient } from './step-client';
import { StepSlots } from './step-slots.util';
import { WebSocketStepClient } from './websocket-step.client';

interface PlannedStep {
  name: string;
  kind: 'http' | 'grpc' | 'websocket';
  streams: boolean;
  client: StepClient;
  dependsOn: string[];
  assertions: CompiledAssertion[];
  /** True when a status assertion decides what a good status is (an expected 404 or NOT_FOUND). */
  statusAsserted: boolean;
  slots: StepSlots | null;
  budgetMs: number | null;
}

interface StepResult {
  ok: boolean;
  status: number;
  errorClass: ErrorClass | null;
  message?: string;
  /** The refusal's `Retry-After` header (s), when it carried one. */
  retryAfterS?: number;
  /** Message arrivals of a streaming step, from the iteration's start. */
  offsetsMs: number[];
}

/**
 * Steps of HTTP, gRPC and WebSocket calls composed into a DAG (spec: semantic orchestrator). One
 * iteration runs every step once; a step starts when all it depends on have passed (and, with its
 * own `concurrency`, when one of its slots is free), steps without a dependency between them run
 * concurrently, and a step whose dependency failed is skipped. Each named assertion is tallied as
 * `step.assertion`, each step's run as `steps[name]` (latency, first message, SLA miss against its
 * `budgetMs`). The iteration fails with the first failing step's class: its transport error, its
 * status class (unless a status assertion expects it), else `other` naming the failed assertion.
 * The iteration's TTFT is the first message of any streaming step (gRPC server streaming,
 * WebSocket), its chunk offsets their messages; HTTP-only DAGs keep neither.
 */
export class StepDagDriver implements RequestDriver {
  private readonly pool: Pool | null;
  private readonly steps: PlannedStep[];

  constructor(scenario: HttpScenario, target: HttpTarget, options: DriverOptions) {
    const auth: Record<string, string> = target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {};
    const needsPool = scenario.steps.some((s) => s.kind === undefined || s.kind === 'http');
    const pool = needsPool
      ? new Pool(targetPath(target.baseUrl, '').origin, {
          connections: options.connections,
          pipelining: 1,
          headersTimeout: 0,
          bodyTimeout: 0,
        })
      : null;
    this.pool = pool;
    const clientOf = (step: Step): StepClient => {
      if (step.kind === 'grpc') return new GrpcStepClient(step, target.baseUrl);
      if (step.kind === 'websocket') return new WebSocketStepClient(step, target.baseUrl, auth);
      return new HttpStepClient(step, target.baseUrl, auth, pool!);
    };
    this.steps = scenario.steps.map((step) => {
      const assertions = resolvedAssertions(step, scenario.assertions);
      return {
        name: step.name,
        kind: step.kind ?? 'http',
        streams: step.kind === 'websocket' || step.kind === 'grpc',
        client: clientOf(step),
        dependsOn: step.dependsOn,
        assertions: assertions.map(compileAssertion),
        statusAsserted: assertions.some((a) => a.kind === 'status'),
        slots: step.concurrency === undefined ? null : new StepSlots(step.concurrency),
        budgetMs: step.budgetMs ?? null,
      };
    });
  }

  async prepare(): Promise<void> {
    for (const step of this.steps) await step.client.prepare?.();
  }

  async execute(request: DriverRequest): Promise<DriverOutcome> {
    const base = {
      ttftMs: null,
      chunkOffsetsMs: [],
      inputTokensClient: 0,
      outputTokensClient: 0,
      usage: null,
      finishReason: null,
    };
    if (!this.steps.every((step) => request.gate(step.client.route)))
      return { ...base, status: 0, e2eMs: 0, errorClass: null, content: '', gated: true };
    const assertions: Record<string, boolean> = {};
    const stepRuns: Record<string, StepRun> = {};
    const toolCalls: ToolCallObservation[] = [];
    const results = new Map<string, Promise<StepResult | null>>();
    const runStep = (step: PlannedStep): Promise<StepResult | null> => {
      let pending = results.get(step.name);
      if (!pending) {
        pending = Promise.all(step.dependsOn.map((d) => runStep(this.steps.find((s) => s.name === d)!))).then(
          (deps) => {
            if (deps.every((d) => d?.ok)) return this.send(step, request, assertions, stepRuns, toolCalls);
            stepRuns[step.name] = SKIPPED;
            return null;
          },
        );
        results.set(step.name, pending);
      }
      return pending;
    };
    // Intent-path replay: the steps on the drawn path (and what they depend on) run, no others.
    const path = request.item.intentPath;
    const steps = path ? this.steps.filter((s) => path.includes(s.name)) : this.steps;
    if (steps.length === 0)
      return {
        ...base,
        status: 0,
        e2eMs: 0,
        errorClass: 'other',
        errorMessage: `intent path ${path!.join(' > ') || '(empty)'} names no step of the scenario`,
        content: '',
      };
    const outcomes = await Promise.all(steps.map(runStep));
    const e2eMs = performance.now() - request.startMono;
    const failedIndex = outcomes.findIndex((o) => o !== null && !o.ok);
    const failed = failedIndex === -1 ? null : outcomes[failedIndex]!;
    const ran = outcomes.filter((o) => o !== null).length;
    const lastStatus = [...outcomes].reverse().find((o) => o !== null)?.status ?? 0;
    const offsets = (await Promise.all(results.values()))
      .flatMap((r) => r?.offsetsMs ?? [])
      .sort((a, b) => a - b);
    return {
      ...base,
      ttftMs: offsets[0] ?? null,
      chunkOffsetsMs: offsets,
      status: failed?.status ?? lastStatus,
      e2eMs,
      errorClass: failed?.errorClass ?? null,
      ...(failed ? { errorMessage: `step ${steps[failedIndex].name}: ${failed.message}` } : {}),
      ...(failed?.retryAfterS !== undefined ? { retryAfterS: failed.retryAfterS } : {}),
      content: `${ran}/${steps.length} steps ran`,
      assertions,
      steps: stepRuns,
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
    };
  }

  private async send(
    step: PlannedStep,
    request: DriverRequest,
    assertions: Record<string, boolean>,
    stepRuns: Record<string, StepRun>,
    toolCalls: ToolCallObservation[],
  ): Promise<StepResult> {
    let release: (() => void) | null = null;
    if (step.slots) {
      try {
        release = await step.slots.acquire(request.cancel.signal());
      } catch (error) {
        stepRuns[step.name] = SKIPPED;
        return {
          ok: false,
          status: 0,
          errorClass: classifyError(error, request.cancel, false),
          message: `waiting for one of its ${step.slots.limit} slots: ${errorText(error)}`,
          offsetsMs: [],
        };
      }
    }
    const started = performance.now();
    let answer: StepAnswer;
    try {
      answer = await step.client.call({ request, toolCalls }, started);
    } finally {
      release?.();
    }
    const latencyMs = performance.now() - started;
    const result = this.judge(step, answer, latencyMs, assertions);
    stepRuns[step.name] = {
      ran: true,
      ok: result.ok,
      latencyMs,
      firstMessageMs: answer.firstMessageMs,
      messages: answer.messages,
      overBudget: step.budgetMs !== null && latencyMs > step.budgetMs,
    };
    const since = started - request.startMono;
    return { ...result, offsetsMs: step.streams ? answer.messageOffsetsMs.map((o) => o + since) : [] };
  }

  /** Tallies the step's assertions (not when the transport failed: nothing came to judge). */
  private judge(
    step: PlannedStep,
    answer: StepAnswer,
    latencyMs: number,
    assertions: Record<string, boolean>,
  ): Omit<StepResult, 'offsetsMs'> {
    const status = answer.httpStatus;
    if (answer.failure)
      return { ok: false, status, errorClass: answer.failure.errorClass, message: answer.failure.message };
    const seen = {
      status: answer.status,
      latencyMs,
      firstMessageMs: answer.firstMessageMs,
      body: answer.body,
    };
    let parsed: { value: unknown } | null = null;
    const json = () => {
      if (parsed === null) {
        try {
          parsed = { value: JSON.parse(answer.body) };
        } catch {
          parsed = { value: undefined };
        }
      }
      return parsed.value;
    };
    let firstFailed: string | null = null;
    for (const assertion of step.assertions) {
      const passed = assertion.check(seen, json);
      assertions[`${step.name}.${assertion.name}`] = passed;
      if (!passed && firstFailed === null) firstFailed = assertion.name;
    }
    const statusClass = step.statusAsserted ? null : answer.statusClass;
    if (statusClass)
      return {
        ok: false,
        status,
        errorClass: statusClass,
        message: answer.statusText ?? `status ${answer.status}`,
        ...(answer.retryAfterS !== undefined ? { retryAfterS: answer.retryAfterS } : {}),
      };
    if (firstFailed !== null)
      return { ok: false, status, errorClass: 'other', message: `assertion ${firstFailed} failed` };
    return { ok: true, status, errorClass: null };
  }

  async close(): Promise<void> {
    await Promise.all(this.steps.map((s) => s.client.close()));
    await this.pool?.close();
  }
}

const SKIPPED: StepRun = {
  ran: false,
  ok: false,
  latencyMs: 0,
  firstMessageMs: null,
  messages: 0,
  overBudget: false,
};
