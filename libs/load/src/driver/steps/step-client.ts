import type { ErrorClass, ToolCallObservation } from '@fathom/contracts';
import type { DriverRequest } from '../request-outcome';

/** What one run of a step gave, whatever its protocol. */
export interface StepAnswer {
  /** What `status` assertions compare: the HTTP status, the gRPC code (0 = OK), 101 for an open WebSocket. */
  status: number;
  /** The transport's status for the request record: HTTP status (gRPC answers are HTTP/2 200); 0: none. */
  httpStatus: number;
  /** What body assertions read (see StepAssertionSchema). */
  body: string;
  /** ms from the step's start to its first message (TTFT-like); null when none arrived. */
  firstMessageMs: number | null;
  /** ms from the step's start to each message, for streaming kinds (gRPC server streaming, WebSocket). */
  messageOffsetsMs: number[];
  messages: number;
  /** The class the status alone earns (HTTP 5xx, a gRPC non-OK code) unless a status assertion decides. */
  statusClass: ErrorClass | null;
  /** Why, for a status class: the status and the first characters of what came with it. */
  statusText?: string;
  /** A refusal's `Retry-After` (s), when the answer carried one (HTTP). */
  retryAfterS?: number;
  /** A failure no assertion can pass: transport, framing, a malformed frame, our timeout. */
  failure?: { errorClass: ErrorClass; message: string };
}

/** Where a client adds what it saw beside the answer (tool calls of HTTP steps on tools). */
export interface StepCallContext {
  readonly request: DriverRequest;
  readonly toolCalls: ToolCallObservation[];
}

/**
 * Sends one step of a steps scenario over its protocol. `call` never throws: every failure is
 * the answer's `failure` (classified), so one bad target never crashes the shard.
 */
export interface StepClient {
  /** The path the breaker gate judges (HTTP path, `/service/method`, WebSocket path). */
  readonly route: string;
  /** Once before the load (loading a proto): a failure fails the shard with its message. */
  prepare?(): Promise<void>;
  call(context: StepCallContext, startedMono: number): Promise<StepAnswer>;
  close(): Promise<void>;
}

/** A failed answer with nothing received. */
export function failedAnswer(errorClass: ErrorClass, message: string, httpStatus = 0): StepAnswer {
  return {
    status: httpStatus,
    httpStatus,
    body: '',
    firstMessageMs: null,
    messageOffsetsMs: [],
    messages: 0,
    statusClass: null,
    failure: { errorClass, message },
  };
}
