import { Pool } from 'undici';
import { headerTexts, type ErrorClass, type HttpScenario, type ToolCallObservation } from '@fathom/contracts';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import { readBody } from './http-body.util';
import { httpStepToolName } from '@fathom/semantic';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import {
  retryAfterOfHeaders,
  type DriverOutcome,
  type DriverRequest,
  type RequestDriver,
} from './request-outcome';
import { compileAssertion, type CompiledAssertion } from './step-assertion.evaluator';
import { targetPath } from './target-url.util';
import {
  observeToolCall,
  pushToolCall,
  toolObserverOf,
  unansweredToolCall,
  type ToolObserver,
} from './tool-observation.util';

/** Step bodies are kept up to this size for assertions. */
const STEP_BODY_CAP = 1024 * 1024;

interface PlannedStep {
  name: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
  dependsOn: string[];
  assertions: CompiledAssertion[];
  /** True when a status assertion decides what a good status is (an expected 404, say). */
  statusAsserted: boolean;
  /** The step declares a tool contract: every answer is recorded as a tool call. */
  declared: ToolObserver | null;
  /** Without a contract, an answer that names its tool version (`x-tool-version`) is recorded so. */
  implicit: ToolObserver;
}

interface StepResult {
  ok: boolean;
  status: number;
  errorClass: ErrorClass | null;
  message?: string;
  /** The refusal's `Retry-After` header (s), when it carried one. */
  retryAfterS?: number;
}

/**
 * Plain HTTP steps composed into a DAG (spec: semantic orchestrator). One iteration runs every step
 * once; a step starts when all it depends on have passed, steps without a dependency between them
 * run concurrently, and a step whose dependency failed is skipped. Each named assertion is tallied
 * as `step.assertion`. Answers of steps that declare a tool `contract`, or that name their tool
 * version (`x-tool-version`), are recorded as tool calls with the bounded shape of their JSON. The iteration fails with the first failing step's class: its transport
 * error, its HTTP status class (unless a status assertion expects it), else `other` naming the
 * failed assertion.
 */
export class HttpDagDriver implements RequestDriver {
  private readonly pool: Pool;
  private readonly steps: PlannedStep[];

  constructor(scenario: HttpScenario, target: HttpTarget, options: DriverOptions) {
    const { origin } = targetPath(target.baseUrl, '');
    this.pool = new Pool(origin, {
      connections: options.connections,
      pipelining: 1,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    const auth: Record<string, string> = target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {};
    this.steps = scenario.steps.map((step) => ({
      name: step.name,
      method: step.method,
      path: targetPath(target.baseUrl, step.path).path,
      headers: {
        ...auth,
        ...(step.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headerTexts(step.headers),
      },
      body: step.body === undefined ? undefined : JSON.stringify(step.body),
      dependsOn: step.dependsOn,
      assertions: step.assertions.map(compileAssertion),
      statusAsserted: step.assertions.some((a) => a.kind === 'status'),
      declared: step.contract ? toolObserverOf(httpStepToolName(step), step.contract, step.path) : null,
      implicit: toolObserverOf(httpStepToolName(step), undefined),
    }));
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
    if (!this.steps.every((step) => request.gate(step.path)))
      return { ...base, status: 0, e2eMs: 0, errorClass: null, content: '', gated: true };
    const assertions: Record<string, boolean> = {};
    const toolCalls: ToolCallObservation[] = [];
    const results = new Map<string, Promise<StepResult | null>>();
    const runStep = (step: PlannedStep): Promise<StepResult | null> => {
      let pending = results.get(step.name);
      if (!pending) {
        pending = Promise.all(step.dependsOn.map((d) => runStep(this.steps.find((s) => s.name === d)!))).then(
          (deps) => (deps.every((d) => d?.ok) ? this.send(step, request, assertions, toolCalls) : null),
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
    return {
      ...base,
      status: failed?.status ?? lastStatus,
      e2eMs,
      errorClass: failed?.errorClass ?? null,
      ...(failed ? { errorMessage: `step ${steps[failedIndex].name}: ${failed.message}` } : {}),
      ...(failed?.retryAfterS !== undefined ? { retryAfterS: failed.retryAfterS } : {}),
      content: `${ran}/${steps.length} steps ran`,
      assertions,
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
    };
  }

  private async send(
    step: PlannedStep,
    request: DriverRequest,
    assertions: Record<string, boolean>,
    toolCalls: ToolCallObservation[],
  ): Promise<StepResult> {
    const started = performance.now();
    let status = 0;
    let recorded = false;
    try {
      const response = await this.pool.request({
        path: step.path,
        method: step.method as 'GET',
        headers: { ...step.headers, ...request.headers },
        body: step.body,
        signal: request.cancel.signal(),
      });
      status = response.statusCode;
      const { text: body, capped } = await readBody(response.body, STEP_BODY_CAP);
      const observer =
        step.declared ?? (response.headers['x-tool-version'] === undefined ? null : step.implicit);
      if (observer !== null) {
        pushToolCall(toolCalls, observeToolCall(observer, status, response.headers, body, capped));
        recorded = true;
      }
      const seen = { status, latencyMs: performance.now() - started, body };
      let parsed: { value: unknown } | null = null;
      const json = () => {
        if (parsed === null) {
          try {
            parsed = { value: JSON.parse(body) };
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
      const httpClass = step.statusAsserted ? null : httpErrorClass(status);
      // The answer's first 200 characters say why (e.g. the spec's "reranker busy: n/32 in use").
      if (httpClass)
        return {
          ok: false,
          status,
          errorClass: httpClass,
          message: body ? `HTTP ${status}: ${body.slice(0, 200)}` : `HTTP ${status}`,
          ...retryAfterOfHeaders(response.headers),
        };
      if (firstFailed !== null)
        return { ok: false, status, errorClass: 'other', message: `assertion ${firstFailed} failed` };
      return { ok: true, status, errorClass: null };
    } catch (error) {
      if (step.declared !== null && !recorded)
        pushToolCall(toolCalls, unansweredToolCall(step.declared, status));
      return {
        ok: false,
        status,
        errorClass: classifyError(error, request.cancel, status !== 0),
        message: errorText(error),
      };
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
