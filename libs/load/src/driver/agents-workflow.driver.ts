import { Pool } from 'undici';
import type { AgentsScenario } from '@fathom/contracts';
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

/**
 * Multi-agent workflows (AgentsScenario): POSTs {agents, steps, stream: true} and reads the NDJSON
 * answer line by line. Each `step` line's arrival (ms from the actual send) is a chunk offset, so
 * the gaps are the per-step latencies and TTFT is the time to the first step. The `result` line's
 * status is the outcome: finishReason, the assertions `workflow.converged` (status completed),
 * `workflow.no-oscillation`, `workflow.no-deadlock` (and `workflow.step-latency` with a
 * stepBudgetMs), and an `other` error naming the failure mode when it is not completed.
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
      const result = await this.readSteps(response.body, request.startMono, offsets);
      const e2eMs = performance.now() - request.startMono;
      const outcome = { ...base, ...ids, status, e2eMs, chunkOffsetsMs: offsets, ttftMs: offsets[0] ?? null };
      if (result === null)
        return {
          ...outcome,
          errorClass: 'stream-truncated',
          errorMessage: `workflow stream ended after ${offsets.length} steps without a result`,
          content: '',
        };
      const assertions: Record<string, boolean> = {
        'workflow.converged': result.status === 'completed',
        'workflow.no-oscillation': result.status !== 'oscillating',
        'workflow.no-deadlock': result.status !== 'deadlock',
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
      });
      const failed = result.status !== 'completed';
      return {
        ...outcome,
        finishReason: result.status,
        errorClass: failed ? 'other' : null,
        ...(failed
          ? {
              errorMessage: `workflow ${result.status}${result.cycle?.length ? `: wait-for cycle ${result.cycle.join(' -> ')}` : ''} after ${result.steps} steps`,
            }
          : {}),
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
  ): Promise<WorkflowResult | null> {
    return new Promise((resolve, reject) => {
      let buffer = '';
      let result: WorkflowResult | null = null;
      const onLine = (line: string, at: number) => {
        if (line.trim() === '') return;
        const parsed = JSON.parse(line) as { type?: unknown };
        if (parsed.type === 'step') offsets.push(at);
        else if (parsed.type === 'result' && typeof (parsed as WorkflowResult).status === 'string')
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
