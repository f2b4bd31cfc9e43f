import { Pool } from 'undici';
import type { AgentsScenario } from '@fathom/contracts';
import {
  judgeAgentWorkflow,
  observedStepOf,
  type ObservedStep,
  type WorkflowVerdict,
} from '@fathom/semantic';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import { readBodyText } from './http-body.util';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import {
  serverRequestIdOf,
  type DriverOutcome,
  type DriverRequest,
  type RequestDriver,
} from './request-outcome';

/** The target's last NDJSON line. */
interface WorkflowResult {
  type: 'result';
  mode?: string;
  status: string;
  steps: number;
  meanIntentDeltaLate?: number;
  cycle?: string[];
}

const ERROR_BODY_CAP = 2048;
/** Step lines kept per workflow for the judge; later steps still count as chunk offsets. */
const MAX_OBSERVED_STEPS = 512;

/**
 * Multi-agent workflows (AgentsScenario): POSTs {agents, steps, stream: true} and reads the NDJSON
 * answer line by line. Each `step` line's arrival (ms from the actual send) is a chunk offset, so
 * the gaps are the per-step latencies and TTFT is the time to the first step. The outcome is
 * judged from the steps observed (`judgeAgentWorkflow`: repeated intents, who holds and waits for
 * what), the target's own `result` status only when the steps decide nothing: finishReason, the
 * assertions `workflow.converged`, `workflow.no-oscillation`, `workflow.no-deadlock` (and
 * `workflow.step-latency` with a stepBudgetMs), an `other` error naming the failure mode
 * ("workflow oscillating|deadlock (observed|reported): ..."), and the content a JSON summary
 * with the observed figures.
 */
export class AgentsWorkflowDriver implements RequestDriver {
  private readonly pool: Pool;
  private readonly body: string;
  private readonly headers: Record<string, string>;

  constructor(
    private readonly scenario: AgentsScenario,
    target: HttpTarget,
    options: DriverOptions,
  ) {
    this.pool = new Pool(new URL(target.baseUrl).origin, {
      connections: options.connections,
      pipelining: 1,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    this.body = JSON.stringify({ agents: scenario.agents, steps: scenario.steps, stream: true });
    this.headers = {
      'content-type': 'application/json',
      accept: 'application/x-ndjson',
      ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
    };
  }

  async execute(request: DriverRequest): Promise<DriverOutcome> {
    const base = {
      ttftMs: null,
      inputTokensClient: 0,
      outputTokensClient: 0,
      usage: null,
      finishReason: null,
    };
    const path = this.scenario.path;
    if (!request.gate(path))
      return { ...base, chunkOffsetsMs: [], status: 0, e2eMs: 0, errorClass: null, content: '', gated: true };
    const offsets: number[] = [];
    const observed: ObservedStep[] = [];
    let status = 0;
    try {
      const response = await this.pool.request({
        path,
        method: 'POST',
        headers: { ...this.headers, ...request.headers },
        body: this.body,
        signal: request.cancel.signal(),
      });
      status = response.statusCode;
      const serverRequestId = serverRequestIdOf(response.headers);
      const ids = serverRequestId === undefined ? {} : { serverRequestId };
      const httpClass = httpErrorClass(status);
      if (httpClass) {
        const text = await readBodyText(response.body, ERROR_BODY_CAP);
        return {
          ...base,
          ...ids,
          chunkOffsetsMs: [],
          status,
          e2eMs: performance.now() - request.startMono,
          errorClass: httpClass,
          errorMessage: `HTTP ${status}: ${text.slice(0, 500)}`,
          content: '',
        };
      }
      const result = await this.readSteps(response.body, request.startMono, offsets, observed);
      const e2eMs = performance.now() - request.startMono;
      const outcome = { ...base, ...ids, status, e2eMs, chunkOffsetsMs: offsets, ttftMs: offsets[0] ?? null };
      if (result === null)
        return {
          ...outcome,
          errorClass: 'stream-truncated',
          errorMessage: `workflow stream ended after ${offsets.length} steps without a result`,
          content: '',
        };
      const judged = judgeAgentWorkflow(observed);
      const verdict = judged.verdict === 'undecided' ? reportedVerdict(result.status) : judged.verdict;
      const by = judged.verdict === 'undecided' ? 'reported' : 'observed';
      const assertions: Record<string, boolean> = {
        'workflow.converged': verdict === 'converged',
        'workflow.no-oscillation': verdict !== 'oscillating',
        'workflow.no-deadlock': verdict !== 'deadlock',
      };
      const budget = this.scenario.stepBudgetMs;
      if (budget !== undefined)
        assertions['workflow.step-latency'] = offsets.every(
          (at, i) => at - (i === 0 ? 0 : offsets[i - 1]) < budget,
        );
      const summary = JSON.stringify({
        status: result.status,
        steps: result.steps,
        meanIntentDeltaLate: result.meanIntentDeltaLate,
        cycle: result.cycle,
        observed: observedFigures(judged),
      });
      const failed = verdict !== 'converged';
      const finishReason =
        verdict === 'converged' ? 'completed' : verdict === 'undecided' ? result.status : verdict;
      return {
        ...outcome,
        finishReason,
        errorClass: failed ? 'other' : null,
        ...(failed ? { errorMessage: failureText(verdict, by, judged, result) } : {}),
        content: summary,
        assertions,
      };
    } catch (error) {
      return {
        ...base,
        chunkOffsetsMs: offsets,
        ttftMs: offsets[0] ?? null,
        status,
        e2eMs: performance.now() - request.startMono,
        errorClass: classifyError(error, request.cancel, status !== 0),
        errorMessage: errorText(error),
        content: '',
      };
    }
  }

  /** Reads NDJSON lines; a step line records its arrival, the result line is returned (null when missing). */
  private readSteps(
    body: NodeJS.ReadableStream,
    startMono: number,
    offsets: number[],
    observed: ObservedStep[],
  ): Promise<WorkflowResult | null> {
    return new Promise((resolve, reject) => {
      let buffer = '';
      let result: WorkflowResult | null = null;
      const onLine = (line: string, at: number) => {
        if (line.trim() === '') return;
        const parsed = JSON.parse(line) as { type?: unknown };
        if (parsed.type === 'step') {
          if (observed.length < MAX_OBSERVED_STEPS) {
            const step = observedStepOf(parsed, offsets.length);
            if (step) observed.push(step);
          }
          offsets.push(at);
        } else if (parsed.type === 'result' && typeof (parsed as WorkflowResult).status === 'string')
          result = parsed as WorkflowResult;
        else throw new Error(`unexpected workflow line: ${line.slice(0, 200)}`);
      };
      body.on('data', (chunk: Buffer) => {
        const at = performance.now() - startMono;
        buffer += chunk.toString('utf8');
        let newline = buffer.indexOf('\n');
        try {
          while (newline !== -1) {
            onLine(buffer.slice(0, newline), at);
            buffer = buffer.slice(newline + 1);
            newline = buffer.indexOf('\n');
          }
        } catch (error) {
          reject(error);
          (body as unknown as { destroy(): void }).destroy();
        }
      });
      body.on('end', () => {
        try {
          onLine(buffer, performance.now() - startMono);
          resolve(result);
        } catch (error) {
          reject(error);
        }
      });
      body.on('error', reject);
    });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** The target's own status as a verdict, for steps that decide nothing. */
function reportedVerdict(status: string): WorkflowVerdict['verdict'] {
  if (status === 'completed') return 'converged';
  if (status === 'oscillating' || status === 'deadlock') return status;
  return 'undecided';
}

/** The figures the analyzer reads back from the record's content (`observed`). */
function observedFigures(v: WorkflowVerdict): Record<string, unknown> {
  return {
    verdict: v.verdict,
    steps: v.steps,
    recurrence: v.recurrence,
    recurrenceSteps: v.recurrenceSteps,
    oscillationScore: v.oscillation.score,
    intentChangeStdDev: v.oscillation.intentChangeStdDev,
    meanActionProbability: v.meanActionProbability,
    stalledAgents: v.stalledAgents.length,
    stalledFor: v.stalledFor,
    waitForCycle: v.waitForCycle,
    waitForCycleSteps: v.waitForCycleSteps,
  };
}

function failureText(
  verdict: WorkflowVerdict['verdict'],
  by: 'observed' | 'reported',
  v: WorkflowVerdict,
  result: WorkflowResult,
): string {
  const steps = `after ${result.steps} steps`;
  if (by === 'reported') {
    const cycle = result.cycle?.length ? `: wait-for cycle ${result.cycle.join(' -> ')}` : '';
    return `workflow ${result.status} (reported)${cycle} ${steps}`;
  }
  if (verdict === 'deadlock')
    return `workflow deadlock (observed): ${v.waitForCycle.length ? `wait-for cycle ${v.waitForCycle.join(' -> ')} for ${v.waitForCycleSteps} steps` : `${v.stalledAgents.length} agents hold resources, no progress for ${v.stalledFor} steps`} ${steps}`;
  if (verdict === 'oscillating')
    return `workflow oscillating (observed): ${(100 * v.recurrence).toFixed(0)} % of ${v.recurrenceSteps} agent moves return to the intent of two steps before, score ${v.oscillation.score.toFixed(3)} ${steps}`;
  return `workflow ${result.status} (undecided) ${steps}`;
}
