import type { ErrorClass, TokenLogprob } from '@fathom/contracts';
import type { PromptItem } from '../dataset/prompt-item';

/** What the executor hands a driver for one request. */
export interface DriverRequest {
  requestId: string;
  /** traceparent, x-fathom-run, x-fathom-request (traffic dyeing). */
  headers: Record<string, string>;
  /** Aborted on timeout or when the run stops; `reason` says which (see engine). */
  signal: AbortSignal;
  /** performance.now() of the actual send; chunk offsets are measured from it. */
  startMono: number;
  item: PromptItem;
  /** Circuit breaker: false = do not send on this path. */
  gate: (path: string) => boolean;
}

/** One request as a driver saw it. Drivers never throw: every failure is an `errorClass`. */
export interface DriverOutcome {
  status: number;
  /** ms from send to the end of the response (or the failure). */
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
  /** The server's own id for the request (`x-request-id`, or the simulator's `x-sim-request-id`). */
  serverRequestId?: string;
  /** True when the gate refused every path: nothing was sent. */
  gated?: boolean;
}

export interface RequestDriver {
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

/** The server's request id from response headers, when it sends one. */
export function serverRequestIdOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const id = headers['x-request-id'] ?? headers['x-sim-request-id'];
  return Array.isArray(id) ? id[0] : id;
}
