import type { Pool } from 'undici';
import { headerProblem, headerTexts, type HttpStep } from '@fathom/contracts';
import { httpStepToolName } from '@fathom/semantic';
import { classifyError, errorText, httpErrorClass } from '../error-class.util';
import { readBody } from '../http-body.util';
import { targetPath } from '../target-url.util';
import { retryAfterOfHeaders } from '../request-outcome';
import {
  observeToolCall,
  pushToolCall,
  toolObserverOf,
  unansweredToolCall,
  type ToolObserver,
} from '../tool-observation.util';
import type { StepAnswer, StepCallContext, StepClient } from './step-client';

/** Step bodies are kept up to this size for assertions. */
const STEP_BODY_CAP = 1024 * 1024;

/**
 * One HTTP step over the scenario's shared undici pool (the target's origin). Its first message
 * is the response head. Answers of steps that declare a tool `contract`, or that name their tool
 * version (`x-tool-version`), are recorded as tool calls with the bounded shape of their JSON.
 */
export class HttpStepClient implements StepClient {
  readonly route: string;
  private readonly headers: Record<string, string>;
  private readonly body: string | undefined;
  /** The step declares a tool contract: every answer is recorded as a tool call. */
  private readonly declared: ToolObserver | null;
  /** Without a contract, an answer that names its tool version (`x-tool-version`) is recorded so. */
  private readonly implicit: ToolObserver;

  constructor(
    private readonly step: HttpStep,
    baseUrl: string,
    auth: Record<string, string>,
    private readonly pool: Pool,
  ) {
    this.route = targetPath(baseUrl, step.path).path;
    this.headers = {
      ...auth,
      ...(step.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headerTexts(step.headers),
    };
    // The campaign's schema checked the plain values; a secret's is known only now. A request
    // undici refuses stalls its pool, so one is refused here, before the run.
    for (const [name, value] of Object.entries(this.headers)) {
      const problem = headerProblem(name, value);
      if (problem) throw new Error(`step ${step.name}: ${problem}`);
    }
    this.body = step.body === undefined ? undefined : JSON.stringify(step.body);
    this.declared = step.contract ? toolObserverOf(httpStepToolName(step), step.contract, step.path) : null;
    this.implicit = toolObserverOf(httpStepToolName(step), undefined);
  }

  async call({ request, toolCalls }: StepCallContext, startedMono: number): Promise<StepAnswer> {
    let status = 0;
    let firstMessageMs: number | null = null;
    let recorded = false;
    try {
      const response = await this.pool.request({
        path: this.route,
        method: this.step.method,
        headers: { ...this.headers, ...request.headers },
        body: this.body,
        signal: request.cancel.signal(),
      });
      status = response.statusCode;
      firstMessageMs = performance.now() - startedMono;
      const { text: body, capped } = await readBody(response.body, STEP_BODY_CAP);
      const observer =
        this.declared ?? (response.headers['x-tool-version'] === undefined ? null : this.implicit);
      if (observer !== null) {
        pushToolCall(toolCalls, observeToolCall(observer, status, response.headers, body, capped));
        recorded = true;
      }
      const statusClass = httpErrorClass(status);
      return {
        status,
        httpStatus: status,
        body,
        firstMessageMs,
        messageOffsetsMs: [],
        messages: 1,
        statusClass,
        // The answer's first 200 characters say why (e.g. the spec's "reranker busy: n/32 in use").
        ...(statusClass
          ? {
              statusText: body ? `HTTP ${status}: ${body.slice(0, 200)}` : `HTTP ${status}`,
              ...retryAfterOfHeaders(response.headers),
            }
          : {}),
      };
    } catch (error) {
      if (this.declared !== null && !recorded)
        pushToolCall(toolCalls, unansweredToolCall(this.declared, status));
      return {
        status,
        httpStatus: status,
        body: '',
        firstMessageMs,
        messageOffsetsMs: [],
        messages: 0,
        statusClass: null,
        failure: {
          errorClass: classifyError(error, request.cancel, status !== 0),
          message: errorText(error),
        },
      };
    }
  }

  /** The pool is the driver's, shared by every HTTP step. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}
