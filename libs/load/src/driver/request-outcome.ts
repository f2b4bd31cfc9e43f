import {
  RETRIEVED_DOCUMENT_LIMITS,
  type ErrorClass,
  type RequestRecord,
  type TokenLogprob,
  type ToolCallObservation,
} from '@fathom/contracts';
import type { PromptItem } from '../dataset/prompt-item';

/** What the executor hands a driver for one request. */
export interface DriverRequest {
  requestId: string;
  /** traceparent, x-fathom-run, x-fathom-request (traffic dyeing). */
  headers: Record<string, string>;
  /** Cancelled on timeout or when the run stops; `reason` says which. */
  cancel: RequestCancel;
  /** performance.now() of the actual send; chunk offsets are measured from it. */
  startMono: number;
  item: PromptItem;
  /** Circuit breaker: false = do not send on this path. */
  gate: (path: string) => boolean;
}

/** One request as a driver saw it. Drivers never throw: every failure is an `errorClass`. */
export interface DriverOutcome {
  status: number;
  /**
   * ms from `startMono` until the request was written to the socket (waiting for a pooled
   * connection, connecting, writing). The engine counts the actual send from there; 0 when the
   * driver cannot tell.
   */
  sendDelayMs?: number;
  /** ms from the actual send to the end of the response (or the failure). */
  e2eMs: number;
  ttftMs: number | null;
  chunkOffsetsMs: number[];
  errorClass: ErrorClass | null;
  errorMessage?: string;
  inputTokensClient: number;
  outputTokensClient: number;
  usage: { promptTokens: number; completionTokens: number; cachedTokens: number | null } | null;
  content: string;
  finishReason: string | null;
  logprobs?: TokenLogprob[];
  /** Named semantic assertions of HTTP steps: name -> passed. */
  assertions?: Record<string, boolean>;
  /** Steps scenarios: each step of the iteration, run or skipped. */
  steps?: Record<string, StepRun>;
  /**
   * Tool calls inside the request with the observed shape of each JSON answer (tool-chain tool
   * calls, HTTP steps on tools), at most MAX_TOOL_CALLS_PER_RECORD; for the schema-drift watch.
   */
  toolCalls?: ToolCallObservation[];
  /**
   * RAG retrieve/rerank: texts of the top retrieved documents, best first, within
   * RETRIEVED_DOCUMENT_LIMITS (see `topDocumentTexts`); for the query/document mismatch watch.
   */
  retrievedDocuments?: string[];
  /** Agent loop: turns, per-turn TTFT, tool latencies, loops (see `RequestRecord.agentLoop`). */
  agentLoop?: RequestRecord['agentLoop'];
  /** The server's own id for the request (`x-request-id`, or the simulator's `x-sim-request-id`). */
  serverRequestId?: string;
  /** A refused answer's `Retry-After` header in seconds (see `retryAfterHeaderSeconds`). */
  retryAfterS?: number;
  /** True when the gate refused every path: nothing was sent. */
  gated?: boolean;
}

/** One step of a steps-scenario iteration. */
export interface StepRun {
  /** False: skipped (a dependency failed, or the iteration ended while it waited for a slot). */
  ran: boolean;
  ok: boolean;
  /** ms from the step's send (after its slot) to its end. */
  latencyMs: number;
  /** ms from the step's send to its first message; null when none arrived. */
  firstMessageMs: number | null;
  messages: number;
  /** Slower than the step's `budgetMs`: an SLA miss for the step. */
  overBudget: boolean;
}

export interface RequestDriver {
  /**
   * Work done once before the first request (e.g. creating a vector collection), outside every
   * request's timing; a failure fails the shard before any load is sent.
   */
  prepare?(): Promise<void>;
  execute(request: DriverRequest): Promise<DriverOutcome>;
  close(): Promise<void>;
}

/** Set by the engine as the abort reason of a request's signal. */
export class RequestTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no complete response within ${timeoutMs} ms`);
    this.name = 'RequestTimeout';
  }
}
export class RunAborted extends Error {
  constructor() {
    super('run aborted');
    this.name = 'RunAborted';
  }
}

/** A `Retry-After` value (RFC 9110 10.2.3) in seconds: delta-seconds, else an HTTP-date from `nowMs`. */
export function retryAfterHeaderSeconds(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isFinite(date) && /[a-z]/i.test(text) ? Math.max(0, (date - nowMs) / 1000) : undefined;
}

/** `{ retryAfterS }` from a raw `Retry-After` header when it parses, else nothing: for an outcome literal. */
export function retryAfterField(value: string | undefined): { retryAfterS?: number } {
  const s = retryAfterHeaderSeconds(value);
  return s === undefined ? {} : { retryAfterS: s };
}

/** `{ retryAfterS }` from undici's response headers (`retry-after`), else nothing. */
export function retryAfterOfHeaders(headers: Record<string, string | string[] | undefined>): {
  retryAfterS?: number;
} {
  const value = headers['retry-after'];
  return retryAfterField(Array.isArray(value) ? value[0] : value);
}

/** The server's request id from response headers, when it sends one. */
export function serverRequestIdOf(
  headers: Record<string, string | string[] | undefined>,
): string | undefined {
  const id = headers['x-request-id'] ?? headers['x-sim-request-id'];
  return Array.isArray(id) ? id[0] : id;
}

/**
 * Cancellation of one request, lighter than an AbortController on the hot path (one listener, no
 * EventTarget); `signal()` makes a real AbortSignal for APIs that need one.
 */
export class RequestCancel {
  reason: RequestTimeout | RunAborted | null = null;
  private listener: ((reason: Error) => void) | null = null;
  private controller: AbortController | null = null;

  get aborted(): boolean {
    return this.reason !== null;
  }

  /** The one listener (the driver's); called at once when already cancelled. */
  onAbort(listener: (reason: Error) => void): void {
    this.listener = listener;
    if (this.reason !== null) listener(this.reason);
  }

  abort(reason: RequestTimeout | RunAborted): void {
    if (this.reason !== null) return;
    this.reason = reason;
    this.controller?.abort(reason);
    this.listener?.(reason);
  }

  signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.reason !== null) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
}

/**
 * The texts of the top `RETRIEVED_DOCUMENT_LIMITS.maxDocuments` ranked documents, best first, each
 * cut to `maxChars`; ranks without a text are left out (the list may be shorter or empty).
 */
export function topDocumentTexts(ranked: readonly (string | null | undefined)[]): string[] {
  const out: string[] = [];
  const n = Math.min(ranked.length, RETRIEVED_DOCUMENT_LIMITS.maxDocuments);
  for (let i = 0; i < n; i++) {
    const text = ranked[i];
    if (typeof text === 'string' && text.length > 0)
      out.push(text.slice(0, RETRIEVED_DOCUMENT_LIMITS.maxChars));
  }
  return out;
}
