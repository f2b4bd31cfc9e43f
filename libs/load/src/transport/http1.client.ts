import { connect, type Socket } from 'node:net';
import { Http1Error } from './http1.error';
import { Http1ResponseParser, type Http1ResponseSink } from './http1-response.parser';

/**
 * One request through `Http1Client`: the caller's object, called back by the client (methods,
 * no closures per request). Exactly one of `onResponseEnd` / `onError` ends it; `onError` may
 * also come for an exchange that already ended (a late cancel) and must then do nothing.
 */
export interface Http1Exchange {
  /** The whole request (head and body) from `Http1Client.requestText`: one socket write. */
  http1Request: string;
  /** The client's bookkeeping: the connection carrying the exchange, null while queued or done. */
  http1Connection: Http1Connection | null;
  /** performance.now() taken right before the request's socket write (again on a retry). */
  onRequestSent(sentMono: number): void;
  onResponseHead(status: number, requestId: string | undefined, retryAfter?: string): void;
  /** Body bytes `bytes[start, end)`, valid only during the call (see Http1ResponseSink). */
  onResponseBody(bytes: Buffer, start: number, end: number, readMono: number): void;
  onResponseEnd(readMono: number): void;
  onError(error: Error): void;
}

export interface Http1ClientOptions {
  /** `http://host:port` (https targets use undici: this client speaks plain TCP only). */
  origin: string;
  method: string;
  path: string;
  /** Sent with every request, after `host`; `content-length` is added per body. */
  headers: Record<string, string>;
  /** At most this many sockets to the origin; more requests wait FIFO. */
  connections: number;
}

/**
 * Every socket of a client reads into this one buffer (`onread`): a read's callback runs to
 * completion before the next read is made, so one buffer serves them all. 64 KiB: a typical
 * socket read on loopback; bigger reads arrive as several callbacks.
 */
const READ_BUFFER_BYTES = 64 * 1024;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * A purpose-built HTTP/1.1 client for the load engine's hot path: one origin, one request
 * template. The request head is serialised once (`POST /path HTTP/1.1`, host, static headers);
 * per request only the dyeing headers, `content-length` and the body are appended, and the whole
 * request goes out in one socket write. Responses are parsed by `Http1ResponseParser` straight
 * from the socket's read buffer (`onread`, no stream machinery, no per-read allocation).
 *
 * Keep-alive pool: at most `connections` sockets; idle ones are reused most recent first; a
 * request that finds none free waits in a FIFO queue. A socket goes back to the pool only after
 * its response was read completely, the server did not ask to close it (Connection: close,
 * HTTP/1.0 without keep-alive, a body read until close) and no stray bytes followed the response.
 * Every other end destroys the socket and frees its slot for the next waiter.
 *
 * Not thread-shared; all callbacks run on the event loop.
 */
export class Http1Client {
  readonly readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  readonly host: string;
  readonly port: number;
  private readonly headPrefix: string;
  private readonly maxConnections: number;
  private readonly idle: Http1Connection[] = [];
  private readonly live = new Set<Http1Connection>();
  private readonly validNames = new Set<string>();
  /** FIFO of waiting exchanges from `waitHead` on; a cancelled waiter's slot becomes null. */
  private waiters: (Http1Exchange | null)[] = [];
  private waitHead = 0;
  private open = 0;
  private closed = false;

  constructor(options: Http1ClientOptions) {
    const url = new URL(options.origin);
    if (url.protocol !== 'http:') throw new Error(`Http1Client speaks plain http only, not ${url.protocol}`);
    this.host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.port = url.port === '' ? 80 : Number(url.port);
    this.maxConnections = Math.max(1, Math.floor(options.connections));
    let head = `${options.method} ${options.path} HTTP/1.1\r\nhost: ${url.host}\r\n`;
    for (const name in options.headers) head += this.headerLine(name, options.headers[name]);
    this.headPrefix = head;
  }

  /** `content-length` and the body: the per-body tail of a request, worth caching per body. */
  static bodyTail(body: string): string {
    return `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  }

  /**
   * The whole request: the pre-serialised head, `headers` (the per-request dyeing headers), and
   * `tail` from `bodyTail`. Throws an Http1Error for a header that would break the framing.
   */
  requestText(headers: Record<string, string>, tail: string): string {
    let text = this.headPrefix;
    for (const name in headers) text += this.headerLine(name, headers[name]);
    return text + tail;
  }

  /** Sends `exchange` on an idle socket, a new one, or queues it. */
  dispatch(exchange: Http1Exchange): void {
    if (this.closed) {
      exchange.onError(new Http1Error('HTTP1_CLIENT_CLOSED', 'client closed'));
      return;
    }
    const idle = this.idle.pop();
    if (idle !== undefined) idle.start(exchange);
    else if (this.open < this.maxConnections) this.openFor(exchange);
    else this.waiters.push(exchange);
  }

  /**
   * Ends `exchange` with `reason` (timeout, run abort, a consumer's own failure): a request on a
   * socket destroys that socket (its response can no longer be told from the next one's) and
   * frees the slot; a queued one leaves the queue.
   */
  cancel(exchange: Http1Exchange, reason: Error): void {
    const connection = exchange.http1Connection;
    if (connection !== null) {
      connection.exchange = null;
      exchange.http1Connection = null;
      this.discard(connection);
      this.pump();
    } else {
      const at = this.waiters.indexOf(exchange, this.waitHead);
      if (at !== -1) this.waiters[at] = null;
    }
    exchange.onError(reason);
  }

  /** Destroys every socket; requests still queued or in flight end with HTTP1_CLIENT_CLOSED. */
  close(): Promise<void> {
    this.closed = true;
    const error = new Http1Error('HTTP1_CLIENT_CLOSED', 'client closed');
    for (let exchange = this.nextWaiter(); exchange !== null; exchange = this.nextWaiter())
      exchange.onError(error);
    for (const connection of [...this.live]) {
      const exchange = connection.exchange;
      connection.exchange = null;
      this.discard(connection);
      if (exchange !== null) {
        exchange.http1Connection = null;
        exchange.onError(error);
      }
    }
    return Promise.resolve();
  }

  /** Open sockets (connecting, busy or idle), for tests and diagnostics. */
  get openConnections(): number {
    return this.open;
  }

  get idleConnections(): number {
    return this.idle.length;
  }

  /** A connection finished a response: reuse it (next waiter first) or destroy it. */
  release(connection: Http1Connection, reusable: boolean): void {
    if (!reusable || this.closed) {
      this.discard(connection);
      this.pump();
      return;
    }
    const next = this.nextWaiter();
    if (next !== null) connection.start(next);
    else this.idle.push(connection);
  }

  /** Frees a connection's slot (once) and destroys its socket. */
  discard(connection: Http1Connection): void {
    if (connection.released) return;
    connection.released = true;
    this.open--;
    this.live.delete(connection);
    const at = this.idle.lastIndexOf(connection);
    if (at !== -1) this.idle.splice(at, 1);
    connection.socket.destroy();
  }

  /**
   * The socket closed (server close, reset, refused) with `exchange` on it before any byte of
   * its response. Retried once on a fresh connection when the socket had served a response
   * before: that is the keep-alive race (the server timed out the idle socket while our request
   * was on its way), and a server that closes an idle socket has not started that request, so
   * no work is repeated. OpenAI's SDKs retry connection errors the same way. The retry gets a new
   * `onRequestSent` stamp: the stale attempt counts as send delay, not as server latency. A
   * fresh connection that fails is never retried (that is the target's answer).
   */
  closedUnderway(connection: Http1Connection, exchange: Http1Exchange, error: Error | null): void {
    this.discard(connection);
    if (connection.reused && !connection.received && !this.closed) this.openFor(exchange);
    else exchange.onError(error ?? new Http1Error('HTTP1_EARLY_CLOSE', earlyCloseText(connection)));
    this.pump();
  }

  private openFor(exchange: Http1Exchange): void {
    this.open++;
    const connection = new Http1Connection(this);
    this.live.add(connection);
    connection.start(exchange);
  }

  /** Free slots go to waiters, oldest first. */
  private pump(): void {
    while (this.open < this.maxConnections && !this.closed) {
      const next = this.nextWaiter();
      if (next === null) return;
      this.openFor(next);
    }
  }

  private nextWaiter(): Http1Exchange | null {
    const waiters = this.waiters;
    while (this.waitHead < waiters.length) {
      const exchange = waiters[this.waitHead];
      waiters[this.waitHead++] = null;
      if (exchange !== null) {
        if (this.waitHead > 1024 && this.waitHead * 2 > waiters.length) {
          this.waiters = waiters.slice(this.waitHead);
          this.waitHead = 0;
        }
        return exchange;
      }
    }
    waiters.length = 0;
    this.waitHead = 0;
    return null;
  }

  private headerLine(name: string, value: string): string {
    if (!this.validNames.has(name)) {
      if (!TOKEN.test(name))
        throw new Http1Error('HTTP1_PROTOCOL', `invalid header name ${JSON.stringify(name)}`);
      this.validNames.add(name);
    }
    // A CR or LF in a value would end the header (request smuggling); NUL is never valid.
    if (value.indexOf('\r') !== -1 || value.indexOf('\n') !== -1 || value.indexOf('\0') !== -1)
      throw new Http1Error('HTTP1_PROTOCOL', `invalid value for header ${name}`);
    return `${name}: ${value}\r\n`;
  }
}

function earlyCloseText(connection: Http1Connection): string {
  if (connection.headParsed) return 'connection closed before the response body was complete';
  return connection.received
    ? 'connection closed inside the response head'
    : 'connection closed before any response byte';
}

/**
 * One socket of an `Http1Client` and the exchange it carries. The socket's handlers are made
 * once per connection; every request reuses them.
 */
export class Http1Connection implements Http1ResponseSink {
  readonly socket: Socket;
  exchange: Http1Exchange | null = null;
  /** The slot was given back (socket destroyed or closed): ignore late events. */
  released = false;
  /** It completed a response before: a close before the next response's first byte is the keep-alive race. */
  reused = false;
  /** Bytes of the current exchange's response arrived. */
  received = false;
  private connected = false;
  private error: Error | null = null;
  private readonly parser = new Http1ResponseParser(this);

  constructor(private readonly client: Http1Client) {
    const socket = connect({
      host: client.host,
      port: client.port,
      onread: {
        buffer: client.readBuffer,
        // The buffer passed back is always `client.readBuffer`; true: keep reading.
        callback: (nread: number) => {
          this.onRead(performance.now(), nread, client.readBuffer);
          return true;
        },
      },
    });
    socket.setNoDelay(true);
    socket.on('connect', () => this.onConnect());
    socket.on('error', (error: Error) => {
      this.error ??= error;
    });
    socket.on('end', () => this.onEnd());
    socket.on('close', () => this.onClose());
    this.socket = socket;
  }

  get headParsed(): boolean {
    return this.parser.headParsed;
  }

  start(exchange: Http1Exchange): void {
    this.exchange = exchange;
    exchange.http1Connection = this;
    this.received = false;
    if (this.connected) this.send(exchange);
  }

  onResponseHead(status: number, requestId: string | undefined, retryAfter?: string): void {
    this.exchange?.onResponseHead(status, requestId, retryAfter);
  }

  onResponseBody(bytes: Buffer, start: number, end: number, readMono: number): void {
    this.exchange?.onResponseBody(bytes, start, end, readMono);
  }

  private send(exchange: Http1Exchange): void {
    exchange.onRequestSent(performance.now());
    this.socket.write(exchange.http1Request);
  }

  private onConnect(): void {
    this.connected = true;
    const exchange = this.exchange;
    if (exchange !== null && !this.released) this.send(exchange);
  }

  /** `readMono` is stamped first thing in the read callback: every body byte of this read carries it. */
  private onRead(readMono: number, nread: number, buf: Buffer): void {
    if (this.released) return;
    const exchange = this.exchange;
    if (exchange === null) {
      // Bytes on an idle socket belong to no request: the connection can no longer be trusted.
      this.client.discard(this);
      return;
    }
    this.received = true;
    let pos: number;
    try {
      pos = this.parser.execute(buf, 0, nread, readMono);
    } catch (error) {
      if (this.exchange === exchange) {
        this.exchange = null;
        exchange.http1Connection = null;
        this.client.discard(this);
        exchange.onError(error as Error);
      }
      return;
    }
    // A consumer callback may have cancelled the exchange (and destroyed this socket).
    if (this.exchange !== exchange || !this.parser.complete) return;
    this.finishExchange(exchange, this.parser.keepAlive && pos === nread, readMono);
  }

  /** FIN from the server: completes a body read until close; anything else is handled on 'close'. */
  private onEnd(): void {
    const readMono = performance.now();
    const exchange = this.exchange;
    if (exchange !== null && !this.released && this.parser.finish())
      this.finishExchange(exchange, false, readMono);
  }

  private onClose(): void {
    if (this.released) return;
    const exchange = this.exchange;
    this.exchange = null;
    if (exchange === null) {
      this.client.discard(this);
      return;
    }
    exchange.http1Connection = null;
    this.client.closedUnderway(this, exchange, this.error);
  }

  private finishExchange(exchange: Http1Exchange, reusable: boolean, readMono: number): void {
    this.exchange = null;
    exchange.http1Connection = null;
    this.parser.reset();
    this.received = false;
    this.reused = true;
    // The socket is back in the pool (or handed to the next waiter) before the consumer runs.
    this.client.release(this, reusable);
    exchange.onResponseEnd(readMono);
  }
}
