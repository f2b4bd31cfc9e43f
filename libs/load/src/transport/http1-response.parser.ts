import { Http1Error } from './http1.error';

/** Limit of a response head (status line + headers) and, separately, of the trailers. */
export const MAX_HEAD_BYTES = 64 * 1024;
/** Chunk extensions are skipped, never kept; this bounds how many bytes of them one size line may carry. */
const MAX_CHUNK_EXT_BYTES = 4096;
/** 1 TiB: a chunk size beyond this is a framing error, not a body (and stays exact in a double). */
const MAX_CHUNK_SIZE = 2 ** 40;
const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');

// Parser states (plain numbers: a switch on small integers).
const HEAD = 0;
const BODY_LENGTH = 1;
const BODY_UNTIL_CLOSE = 2;
const CHUNK_SIZE = 3;
const CHUNK_EXT = 4;
const CHUNK_SIZE_LF = 5;
const CHUNK_DATA = 6;
const CHUNK_DATA_CR = 7;
const CHUNK_DATA_LF = 8;
const TRAILER_START = 9;
const TRAILER_LINE = 10;
const TRAILER_LINE_LF = 11;
const TRAILER_END_LF = 12;
const DONE = 13;

/**
 * Receives what the parser finds. `bytes[start, end)` is body only (chunk framing removed) and is
 * valid only during the call: the transport reads every socket into one reused buffer, so a
 * consumer that keeps bytes copies them. `readMono` is the performance.now() taken when the
 * socket read that carried the bytes completed (one stamp per read).
 */
export interface Http1ResponseSink {
  /** `retryAfter`: the raw `Retry-After` header of the response, when it carries one. */
  onResponseHead(status: number, requestId: string | undefined, retryAfter?: string): void;
  onResponseBody(bytes: Buffer, start: number, end: number, readMono: number): void;
}

/** A final response head's text and the fields read from it. */
interface ParsedHead {
  readonly text: string;
  readonly status: number;
  readonly minorVersion: number;
  readonly contentLength: number;
  readonly transferEncoding: boolean;
  readonly chunkedLast: boolean;
  readonly connectionClose: boolean;
  readonly connectionKeepAlive: boolean;
  readonly xRequestId: string | undefined;
  readonly xSimRequestId: string | undefined;
  readonly retryAfter: string | undefined;
}

/**
 * Incremental HTTP/1.x response parser (RFC 9112) for one connection, one response at a time
 * (no pipelining). Any split of the bytes into reads gives the same head and body. It keeps only
 * what the load engine needs from the head: status, `Content-Length`, `Transfer-Encoding`,
 * `Connection`, `Retry-After` and the server's request id (`x-request-id`, else `x-sim-request-id`); names are
 * case-insensitive. 1xx interim responses are skipped; bodies are framed by chunked coding (chunk
 * extensions skipped, trailers read and dropped), Content-Length, or the end of the connection.
 * Lines must end in CRLF (a bare LF is a framing error). Every framing error throws an
 * `Http1Error` (`HTTP1_PROTOCOL`, or `HTTP1_HEADERS_TOO_LARGE` past MAX_HEAD_BYTES); the parser
 * is then unusable and its connection must be closed.
 */
export class Http1ResponseParser {
  status = 0;
  /** False when the connection must close after this response (Connection: close, HTTP/1.0, read-until-close). */
  keepAlive = true;
  requestId: string | undefined = undefined;
  /** The response's `Retry-After` header, raw (a 429 or 503 may carry one). */
  retryAfter: string | undefined = undefined;
  private state = HEAD;
  private contentLength = -1;
  private transferEncoding = false;
  private chunkedLast = false;
  private connectionClose = false;
  private connectionKeepAlive = false;
  private minorVersion = 1;
  private xRequestId: string | undefined = undefined;
  private xSimRequestId: string | undefined = undefined;
  /** Body bytes left in the Content-Length body or the current chunk. */
  private remaining = 0;
  private chunkSize = 0;
  private sizeDigits = 0;
  private extBytes = 0;
  private trailerBytes = 0;
  /** A head split across reads is gathered here (allocated on first need, kept for the connection). */
  private headBuf: Buffer | null = null;
  private headLen = 0;
  /** The last final head parsed and its fields (see `parseHead`). */
  private lastHead: ParsedHead | null = null;

  constructor(private readonly sink: Http1ResponseSink) {}

  /** Ready for the next response on the same connection. */
  reset(): void {
    this.state = HEAD;
    this.status = 0;
    this.keepAlive = true;
    this.requestId = undefined;
    this.headLen = 0;
    this.resetHeadFields();
  }

  get complete(): boolean {
    return this.state === DONE;
  }

  /** True once a final (non-1xx) head was parsed. */
  get headParsed(): boolean {
    return this.state !== HEAD;
  }

  /**
   * Parses `bytes[start, end)`. Returns the index after the response's last byte when the response
   * completed in this range (bytes from there on are not this response's), else `end`.
   */
  execute(bytes: Buffer, start: number, end: number, readMono: number): number {
    let pos = start;
    while (pos < end) {
      switch (this.state) {
        case HEAD:
          pos = this.readHead(bytes, pos, end);
          break;
        case BODY_LENGTH: {
          const n = Math.min(this.remaining, end - pos);
          this.remaining -= n;
          if (this.remaining === 0) this.state = DONE;
          this.sink.onResponseBody(bytes, pos, pos + n, readMono);
          pos += n;
          break;
        }
        case BODY_UNTIL_CLOSE:
          this.sink.onResponseBody(bytes, pos, end, readMono);
          return end;
        case CHUNK_DATA: {
          const n = Math.min(this.remaining, end - pos);
          this.remaining -= n;
          if (this.remaining === 0) this.state = CHUNK_DATA_CR;
          this.sink.onResponseBody(bytes, pos, pos + n, readMono);
          pos += n;
          break;
        }
        case DONE:
          return pos;
        default:
          pos = this.readChunkFraming(bytes, pos, end);
      }
    }
    return pos;
  }

  /**
   * The server closed the connection (EOF). True when that completed the response (a body read
   * until close); false when the response was incomplete.
   */
  finish(): boolean {
    if (this.state === BODY_UNTIL_CLOSE) this.state = DONE;
    return this.state === DONE;
  }

  private readHead(bytes: Buffer, pos: number, end: number): number {
    let head: string;
    let next: number;
    if (this.headLen === 0) {
      const idx = bytes.indexOf(CRLFCRLF, pos);
      if (idx === -1 || idx + 4 > end) {
        this.stashHead(bytes, pos, end);
        return end;
      }
      if (idx + 4 - pos > MAX_HEAD_BYTES) throw tooLarge('response head');
      head = bytes.toString('latin1', pos, idx + 2);
      next = idx + 4;
    } else {
      const buf = this.headBuf!;
      const old = this.headLen;
      const take = Math.min(end - pos, MAX_HEAD_BYTES - old);
      bytes.copy(buf, old, pos, pos + take);
      this.headLen = old + take;
      const idx = buf.indexOf(CRLFCRLF, old >= 3 ? old - 3 : 0);
      if (idx === -1 || idx + 4 > this.headLen) {
        if (take < end - pos || this.headLen === MAX_HEAD_BYTES) throw tooLarge('response head');
        return end;
      }
      head = buf.toString('latin1', 0, idx + 2);
      next = pos + (idx + 4 - old);
      this.headLen = 0;
    }
    this.parseHead(head);
    return next;
  }

  private stashHead(bytes: Buffer, pos: number, end: number): void {
    const n = end - pos;
    if (this.headLen + n > MAX_HEAD_BYTES) throw tooLarge('response head');
    this.headBuf ??= Buffer.allocUnsafe(MAX_HEAD_BYTES);
    bytes.copy(this.headBuf, this.headLen, pos, end);
    this.headLen += n;
  }

  /**
   * `text`: status line and header lines, each with its CRLF, without the blank line. A final
   * head equal to the last one parsed on this connection (a server repeats its head but for
   * `Date`, which changes once a second) takes that one's fields without being read again: they
   * are a function of the text alone (the fields start reset, see `reset`).
   */
  private parseHead(text: string): void {
    const memo = this.lastHead;
    if (memo !== null && memo.text === text) {
      this.minorVersion = memo.minorVersion;
      this.contentLength = memo.contentLength;
      this.transferEncoding = memo.transferEncoding;
      this.chunkedLast = memo.chunkedLast;
      this.connectionClose = memo.connectionClose;
      this.connectionKeepAlive = memo.connectionKeepAlive;
      this.xRequestId = memo.xRequestId;
      this.xSimRequestId = memo.xSimRequestId;
      this.retryAfter = memo.retryAfter;
      this.finalHead(memo.status);
      return;
    }
    const status = this.readHeadText(text);
    if (status < 200) return;
    this.lastHead = {
      text,
      status,
      minorVersion: this.minorVersion,
      contentLength: this.contentLength,
      transferEncoding: this.transferEncoding,
      chunkedLast: this.chunkedLast,
      connectionClose: this.connectionClose,
      connectionKeepAlive: this.connectionKeepAlive,
      xRequestId: this.xRequestId,
      xSimRequestId: this.xSimRequestId,
      retryAfter: this.retryAfter,
    };
    this.finalHead(status);
  }

  /** Reads a head's status line and fields; returns the status (a 1xx head leaves the fields reset). */
  private readHeadText(text: string): number {
    let p = 0;
    // RFC 9112 2.2: a client SHOULD ignore empty lines received before the status line.
    while (text.charCodeAt(p) === 13 && text.charCodeAt(p + 1) === 10) p += 2;
    let lf = text.indexOf('\n', p);
    if (
      lf < p + 13 ||
      text.charCodeAt(lf - 1) !== 13 ||
      !text.startsWith('HTTP/1.', p) ||
      text.charCodeAt(p + 8) !== 32
    )
      throw protocol(`malformed status line ${JSON.stringify(text.slice(p, Math.min(lf, p + 80)))}`);
    const minor = text.charCodeAt(p + 7) - 48;
    const d1 = text.charCodeAt(p + 9) - 48;
    const d2 = text.charCodeAt(p + 10) - 48;
    const d3 = text.charCodeAt(p + 11) - 48;
    const after = text.charCodeAt(p + 12);
    if (
      (minor !== 0 && minor !== 1) ||
      d1 < 1 ||
      d1 > 9 ||
      d2 < 0 ||
      d2 > 9 ||
      d3 < 0 ||
      d3 > 9 ||
      (after !== 32 && p + 12 !== lf - 1)
    )
      throw protocol(`malformed status line ${JSON.stringify(text.slice(p, Math.min(lf, p + 80)))}`);
    const status = d1 * 100 + d2 * 10 + d3;
    this.minorVersion = minor;
    let line = lf + 1;
    const length = text.length;
    while (line < length) {
      lf = text.indexOf('\n', line);
      if (lf === -1 || text.charCodeAt(lf - 1) !== 13) throw protocol('header line not ended by CRLF');
      const colon = text.indexOf(':', line);
      const first = text.charCodeAt(line);
      if (colon === -1 || colon >= lf || colon === line || first === 32 || first === 9) {
        throw protocol(
          `malformed header line ${JSON.stringify(text.slice(line, Math.min(lf - 1, line + 80)))}`,
        );
      }
      const last = text.charCodeAt(colon - 1);
      if (last === 32 || last === 9) throw protocol('whitespace between header name and colon');
      const nameLength = colon - line;
      // Only the few names we read are lower-cased; the rest are skipped by length.
      if (
        nameLength === 14 ||
        nameLength === 17 ||
        nameLength === 10 ||
        nameLength === 12 ||
        nameLength === 16 ||
        nameLength === 11
      ) {
        this.headerField(text.slice(line, colon).toLowerCase(), trimValue(text, colon + 1, lf - 1));
      }
      line = lf + 1;
    }
    if (status < 200) {
      // 101 answers an Upgrade we never send; other 1xx are interim: the final response follows.
      if (status === 101) throw protocol('101 Switching Protocols without an upgrade request');
      this.resetHeadFields();
    }
    return status;
  }

  /** The body's framing and the connection's fate from a final head's fields; tells the sink. */
  private finalHead(status: number): void {
    this.status = status;
    // x-request-id wins when both are present, whatever their order.
    this.requestId = this.xRequestId ?? this.xSimRequestId;
    this.keepAlive = !this.connectionClose && (this.minorVersion === 1 || this.connectionKeepAlive);
    if (status === 204 || status === 304) {
      this.state = DONE;
    } else if (this.transferEncoding) {
      if (this.chunkedLast) {
        this.state = CHUNK_SIZE;
        this.chunkSize = 0;
        this.sizeDigits = 0;
        // RFC 9112 6.3: both framings at once is a sign of smuggling; use chunked, never reuse.
        if (this.contentLength >= 0) this.keepAlive = false;
      } else {
        this.state = BODY_UNTIL_CLOSE;
        this.keepAlive = false;
      }
    } else if (this.contentLength >= 0) {
      this.remaining = this.contentLength;
      this.state = this.contentLength === 0 ? DONE : BODY_LENGTH;
    } else {
      this.state = BODY_UNTIL_CLOSE;
      this.keepAlive = false;
    }
    this.sink.onResponseHead(status, this.requestId, this.retryAfter);
  }

  private headerField(name: string, value: string): void {
    switch (name) {
      case 'content-length': {
        const n = parseDecimal(value);
        if (n < 0) throw protocol(`invalid Content-Length ${JSON.stringify(value.slice(0, 40))}`);
        if (this.contentLength >= 0 && this.contentLength !== n) throw protocol('conflicting Content-Length');
        this.contentLength = n;
        return;
      }
      case 'transfer-encoding': {
        this.transferEncoding = true;
        const comma = value.lastIndexOf(',');
        this.chunkedLast = (comma === -1 ? value : value.slice(comma + 1).trim()).toLowerCase() === 'chunked';
        return;
      }
      case 'connection': {
        const lower = value.toLowerCase();
        if (lower === 'close') this.connectionClose = true;
        else if (lower === 'keep-alive') this.connectionKeepAlive = true;
        else
          for (const token of lower.split(',')) {
            const t = token.trim();
            if (t === 'close') this.connectionClose = true;
            else if (t === 'keep-alive') this.connectionKeepAlive = true;
          }
        return;
      }
      case 'x-request-id':
        this.xRequestId = value;
        return;
      case 'x-sim-request-id':
        this.xSimRequestId = value;
        return;
      case 'retry-after':
        this.retryAfter = value;
        return;
    }
  }

  private resetHeadFields(): void {
    this.contentLength = -1;
    this.transferEncoding = false;
    this.chunkedLast = false;
    this.connectionClose = false;
    this.connectionKeepAlive = false;
    this.xRequestId = undefined;
    this.xSimRequestId = undefined;
    this.retryAfter = undefined;
  }

  /** Chunk size lines, the CRLF after chunk data, trailers: byte by byte, any split. */
  private readChunkFraming(bytes: Buffer, pos: number, end: number): number {
    while (pos < end) {
      const c = bytes[pos];
      switch (this.state) {
        case CHUNK_SIZE: {
          const d = hexValue(c);
          if (d >= 0) {
            this.chunkSize = this.chunkSize * 16 + d;
            this.sizeDigits++;
            if (this.chunkSize > MAX_CHUNK_SIZE) throw protocol('chunk size too large');
          } else if (this.sizeDigits === 0) {
            throw protocol(`chunk size line does not start with a hex digit (byte ${c})`);
          } else if (c === 13) {
            this.state = CHUNK_SIZE_LF;
          } else if (c === 59 /* ; */ || c === 32 || c === 9) {
            this.state = CHUNK_EXT;
            this.extBytes = 0;
          } else {
            throw protocol(`invalid byte ${c} in chunk size`);
          }
          pos++;
          break;
        }
        case CHUNK_EXT: {
          const cr = bytes.indexOf(13, pos);
          const stop = cr === -1 || cr >= end ? end : cr;
          this.extBytes += stop - pos;
          if (this.extBytes > MAX_CHUNK_EXT_BYTES) throw protocol('chunk extension too long');
          if (stop < end) this.state = CHUNK_SIZE_LF;
          pos = stop < end ? stop + 1 : end;
          break;
        }
        case CHUNK_SIZE_LF:
          if (c !== 10) throw protocol('chunk size line not ended by CRLF');
          pos++;
          if (this.chunkSize === 0) {
            this.state = TRAILER_START;
            this.trailerBytes = 0;
          } else {
            this.state = CHUNK_DATA;
            this.remaining = this.chunkSize;
            this.chunkSize = 0;
            this.sizeDigits = 0;
            return pos;
          }
          break;
        case CHUNK_DATA_CR:
          if (c !== 13) throw protocol('chunk data not followed by CRLF');
          this.state = CHUNK_DATA_LF;
          pos++;
          break;
        case CHUNK_DATA_LF:
          if (c !== 10) throw protocol('chunk data not followed by CRLF');
          this.state = CHUNK_SIZE;
          pos++;
          break;
        case TRAILER_START:
          this.state = c === 13 ? TRAILER_END_LF : TRAILER_LINE;
          if (++this.trailerBytes > MAX_HEAD_BYTES) throw tooLarge('trailers');
          pos++;
          break;
        case TRAILER_LINE: {
          const cr = bytes.indexOf(13, pos);
          const stop = cr === -1 || cr >= end ? end : cr;
          this.trailerBytes += stop - pos;
          if (this.trailerBytes > MAX_HEAD_BYTES) throw tooLarge('trailers');
          if (stop < end) this.state = TRAILER_LINE_LF;
          pos = stop < end ? stop + 1 : end;
          break;
        }
        case TRAILER_LINE_LF:
          if (c !== 10) throw protocol('trailer line not ended by CRLF');
          this.state = TRAILER_START;
          pos++;
          break;
        case TRAILER_END_LF:
          if (c !== 10) throw protocol('trailers not ended by CRLF');
          this.state = DONE;
          return pos + 1;
        default:
          // CHUNK_DATA or DONE: back to `execute`.
          return pos;
      }
    }
    return pos;
  }
}

function protocol(message: string): Http1Error {
  return new Http1Error('HTTP1_PROTOCOL', message);
}

function tooLarge(what: string): Http1Error {
  return new Http1Error('HTTP1_HEADERS_TOO_LARGE', `${what} larger than ${MAX_HEAD_BYTES} bytes`);
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** Non-negative decimal integer (digits only, at most 15), else -1. */
function parseDecimal(value: string): number {
  const length = value.length;
  if (length === 0 || length > 15) return -1;
  let n = 0;
  for (let i = 0; i < length; i++) {
    const d = value.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/** `text[start, end)` without leading and trailing SP/HT (optional whitespace around a field value). */
function trimValue(text: string, start: number, end: number): string {
  while (start < end && (text.charCodeAt(start) === 32 || text.charCodeAt(start) === 9)) start++;
  while (end > start && (text.charCodeAt(end - 1) === 32 || text.charCodeAt(end - 1) === 9)) end--;
  return text.slice(start, end);
}
