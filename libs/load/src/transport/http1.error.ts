/**
 * Failures the HTTP/1.1 transport raises itself (socket errors keep Node's own `code`, e.g.
 * ECONNREFUSED). `classifyError` maps the codes to the contract's error classes:
 * - `HTTP1_PROTOCOL`: the response broke HTTP/1.1 framing (status line, header line, chunk size,
 *   bytes after a complete response while no request was out, a 101 we never asked for);
 * - `HTTP1_HEADERS_TOO_LARGE`: the response head (or the trailers) exceeded the size limit;
 * - `HTTP1_EARLY_CLOSE`: the server closed the connection before the response was complete;
 * - `HTTP1_CLIENT_CLOSED`: the client was closed with the request still queued or in flight.
 */
export type Http1ErrorCode =
  'HTTP1_PROTOCOL' | 'HTTP1_HEADERS_TOO_LARGE' | 'HTTP1_EARLY_CLOSE' | 'HTTP1_CLIENT_CLOSED';

export class Http1Error extends Error {
  constructor(
    readonly code: Http1ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'Http1Error';
  }
}
