/**
 * Why a stream could not be assembled:
 * - `malformed-json`: a `data:` payload is not JSON (truncated write, proxy garbage);
 * - `unexpected-shape`: valid JSON, but a known field has the wrong type;
 * - `api-error`: the server streamed an error object (`{"error": ...}` or vLLM's
 *   `{"object": "error", ...}`) instead of a chunk.
 */
export type StreamParseErrorKind = 'malformed-json' | 'unexpected-shape' | 'api-error';

export class StreamParseError extends Error {
  override readonly name = 'StreamParseError';

  constructor(
    readonly kind: StreamParseErrorKind,
    message: string,
    /** The offending payload, cut to 200 characters so logs stay small. */
    readonly payloadExcerpt: string,
    /** 1-based position of the payload among the data payloads accepted so far. */
    readonly eventIndex: number,
    /** For `api-error`: what the server said. */
    readonly apiError?: { message: string; type: string | null; code: string | number | null },
  ) {
    super(`${kind}: ${message} (event ${eventIndex})`);
  }
}

export function excerpt(payload: string, max = 200): string {
  return payload.length <= max ? payload : `${payload.slice(0, max)}...`;
}
