import type { ErrorClass } from '@fathom/contracts';
import { StreamParseError } from '@fathom/semantic';
import { RequestTimeout, type RequestCancel } from './request-outcome';

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'EPIPE',
]);

/**
 * Maps a failure to the contract's error class. `cancel.reason` tells our own timeout from a run
 * abort; a broken connection after the response headers arrived is a truncated stream, before
 * them a connect error. The own HTTP/1.1 client's framing errors (malformed status line, header
 * or chunk size, an oversized head) and a body past a driver's cap are `protocol`; the record's errorMessage says which. A body
 * that cannot be parsed is `malformed-sse` when it was a stream, `malformed-json` when it was one
 * JSON document (`body: 'json'`, a non-streamed response).
 */
export function classifyError(
  error: unknown,
  cancel: RequestCancel,
  headersReceived: boolean,
  body: 'sse' | 'json' = 'sse',
): ErrorClass {
  if (cancel.aborted) return cancel.reason instanceof RequestTimeout ? 'timeout' : 'aborted';
  if (error instanceof StreamParseError) {
    if (error.kind === 'api-error') return 'other';
    return body === 'json' ? 'malformed-json' : 'malformed-sse';
  }
  const code = errorCode(error);
  if (code === 'HTTP1_EARLY_CLOSE') return headersReceived ? 'stream-truncated' : 'connect';
  if (code === 'HTTP1_PROTOCOL' || code === 'HTTP1_HEADERS_TOO_LARGE' || code === 'RESPONSE_TOO_LARGE')
    return 'protocol';
  if (code === 'HTTP1_CLIENT_CLOSED') return 'aborted';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  if (code !== undefined && CONNECT_CODES.has(code)) return headersReceived ? 'stream-truncated' : 'connect';
  if (code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR') return 'aborted';
  return 'other';
}

/**
 * The string code of a failure or of its cause (ECONNREFUSED, UND_ERR_..., HTTP1_...); a
 * DOMException's numeric code (23 for a timeout) is not one a user or a class could use.
 */
export function errorCode(error: unknown): string | undefined {
  const e = error as { code?: unknown; cause?: { code?: unknown } } | null;
  return [e?.code, e?.cause?.code].find((c): c is string => typeof c === 'string');
}

/** Why a streamed answer that held bytes but not one server-sent event is `malformed-sse`. */
export function noEventStreamMessage(status: number, bytes: number): string {
  return `HTTP ${status} answer of ${bytes} bytes held no server-sent event: not an event stream`;
}

export function httpErrorClass(status: number): ErrorClass | null {
  if (status >= 500) return 'http-5xx';
  if (status >= 400) return 'http-4xx';
  return null;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
