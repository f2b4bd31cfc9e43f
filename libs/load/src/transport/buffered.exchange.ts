import type { Http1Connection, Http1Exchange } from './http1.client';

/**
 * An `Http1Exchange` that keeps the whole response body (up to `capBytes`; the rest is read and
 * dropped, `capped` says so) and settles `done` once: resolved at the response's end, rejected
 * with the transport's error. For drivers off the streaming hot path (embeddings).
 */
export class BufferedExchange implements Http1Exchange {
  http1Request = '';
  http1Connection: Http1Connection | null = null;
  status = 0;
  headersReceived = false;
  requestId: string | undefined = undefined;
  /** The answer's `Retry-After` header, raw (a 429 or 503 may carry one). */
  retryAfter: string | undefined = undefined;
  /** performance.now() right before the request's socket write; the caller's start until then. */
  sentMono: number;
  /** performance.now() of the read that completed the response (or of the failure). */
  endMono = 0;
  capped = false;
  readonly done: Promise<void>;
  private settled = false;
  private readonly parts: Buffer[] = [];
  private bytes = 0;
  private resolve!: () => void;
  private reject!: (error: Error) => void;

  constructor(
    private readonly capBytes: number,
    startMono: number,
  ) {
    this.sentMono = startMono;
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** The kept body as UTF-8 text. */
  text(): string {
    const parts = this.parts;
    if (parts.length === 0) return '';
    return (parts.length === 1 ? parts[0] : Buffer.concat(parts, this.bytes)).toString('utf8');
  }

  onRequestSent(sentMono: number): void {
    this.sentMono = sentMono;
  }

  onResponseHead(status: number, requestId: string | undefined, retryAfter?: string): void {
    this.status = status;
    this.headersReceived = true;
    this.requestId = requestId;
    this.retryAfter = retryAfter;
  }

  onResponseBody(bytes: Buffer, start: number, end: number): void {
    const room = this.capBytes - this.bytes;
    const n = Math.min(room, end - start);
    if (n < end - start) this.capped = true;
    if (n <= 0) return;
    // The transport's read buffer is reused after this call: copy.
    const part = Buffer.allocUnsafe(n);
    bytes.copy(part, 0, start, start + n);
    this.parts.push(part);
    this.bytes += n;
  }

  onResponseEnd(readMono: number): void {
    if (this.settled) return;
    this.settled = true;
    this.endMono = readMono;
    this.resolve();
  }

  onError(error: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.endMono = performance.now();
    this.reject(error);
  }
}
