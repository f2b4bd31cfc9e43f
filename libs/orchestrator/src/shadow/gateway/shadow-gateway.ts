import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect as connectTcp, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as connectTls } from 'node:tls';
import { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { RedactionRulesSchema } from '@fathom/contracts';
import { MirrorThread, type MirrorCounts } from './mirror.thread';

export interface ShadowGatewayOptions {
  /** Where production clients connect. */
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** The production server, e.g. `http://10.0.0.5:8000` (the request's path is appended as is). */
  readonly primary: string;
  /**
   * Where copies go: a live shadow campaign's mirror receiver
   * (`<api>/v1/shadow-campaigns/<id>/mirror`), with the API token if the orchestrator has one.
   * null: a pure proxy (nothing is copied).
   */
  readonly mirror: { readonly url: string; readonly token?: string } | null;
  /** Share of chat completion requests copied, 0..1. */
  readonly sampleRate?: number;
  /** Copies on their way to the receiver at most; beyond it a copy is dropped (counted). */
  readonly maxPendingCopies?: number;
  /** A copy not accepted within this is abandoned (counted), ms. */
  readonly copyTimeoutMs?: number;
  /** Delay before the copy thread's restart n after it died, ms; default 1 s doubling, at most 30 s. */
  readonly copyRestartBackoffMs?: (consecutiveDeaths: number) => number;
  /**
   * Request bodies up to this many bytes are read whole, then forwarded, and may be copied; a
   * bigger one is streamed to the primary as it arrives and never copied (`copiesTooLarge`), so
   * the gateway holds at most this much of any request. Default 1 MiB (the mirror receiver
   * takes 100 KB copies at most).
   */
  readonly maxBufferedBodyBytes?: number;
  /** Connections to the primary at most (requests beyond wait for one); default 256. */
  readonly maxPrimaryConnections?: number;
}

/** The gateway's counts: its own forwarding, and its copy thread's (see `MirrorCounts`). */
export interface ShadowGatewayStats extends MirrorCounts {
  /** Requests forwarded to the primary, and those the primary could not be reached for (502). */
  forwarded: number;
  primaryUnreachable: number;
  /** Requests the gateway could not forward as sent (400: a `*` target, one undici refuses). */
  refused: number;
}

export interface ShadowGateway {
  readonly url: string;
  /** Copy counts may lag the copy thread by up to 50 ms (its reports are coalesced). */
  stats(): ShadowGatewayStats;
  /**
   * The kill switch. false: no copy leaves after this resolves (it resolves once the copy thread
   * is ended, in milliseconds; copies on their way are abandoned, counted dropped); the gateway
   * is a pure proxy. true: copying starts again (resolves once the thread is ready).
   */
  setMirroring(enabled: boolean): Promise<void>;
  /** True from the moment `close` was called: a health check should take the gateway out. */
  closing(): boolean;
  /** Ends the copy thread as a crash would (it is restarted after the backoff). For operators and tests. */
  terminateCopyWorker(): Promise<void>;
  /** Stops listening, ends the copy thread, closes the connections to the primary. Once: later calls share it. */
  close(): Promise<void>;
}

/**
 * Hop-by-hop headers (RFC 9110 7.6.1) are the connection's, never forwarded. So is `expect`:
 * Node's server answers a caller's `100-continue` itself, and undici refuses to send the header
 * (every such request, curl's bodies over 1 MB among them, was answered 502).
 */
const HOP_BY_HOP = new Set([
  'connection',
  'expect',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);
/** After the receiver answered 404 (campaign stopped or gone), copying pauses this long, ms. */
const PAUSE_ON_NOT_LIVE_MS = 5000;

/**
 * Raw headers (name, value, name, value, ...) but hop-by-hop ones, in their order and spelling,
 * repeated ones kept: what `writeHead` and undici take as they are, without a parsed object.
 */
function endToEnd(raw: readonly string[]): string[] {
  const to: string[] = [];
  for (let i = 0; i < raw.length; i += 2)
    if (!HOP_BY_HOP.has(raw[i].toLowerCase())) to.push(raw[i], raw[i + 1]);
  return to;
}

/** The value of header `name` (lower case) as `req.headers` would give it: repeats joined by ", ". */
function headerValue(raw: readonly string[], name: string): string | null {
  let value: string | null = null;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i].length === name.length && raw[i].toLowerCase() === name)
      value = value === null ? raw[i + 1] : `${value}, ${raw[i + 1]}`;
  return value;
}

/**
 * The request's body: its bytes when it ends within `max` (read with plain events: an async
 * iterator costs more per request), else a stream of what came and what follows, forwarded as
 * it arrives.
 */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | Readable> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= max) return;
      req.pause();
      req.off('data', onData).off('end', onEnd).off('error', reject);
      resolve(Readable.from(continued(chunks, req), { objectMode: false }));
    };
    const onEnd = () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    req.on('data', onData).once('end', onEnd).once('error', reject);
  });
}

async function* continued(head: Buffer[], rest: IncomingMessage): AsyncGenerator<Buffer> {
  yield* head;
  for await (const chunk of rest) yield chunk as Buffer;
}

/**
 * Undici's handler for one forwarded request: the primary's status, headers (raw, but hop-by-hop
 * ones) and body chunks go to the caller as they arrive, with backpressure; no stream or promise
 * per answer in between. `answered` runs once the primary's status is in, before the caller's
 * headers are written; `unreachable` when the primary failed before that (then nothing was
 * written). A primary breaking off mid-answer breaks off the caller's connection too; a caller
 * that leaves aborts the request to the primary.
 */
class ForwardToCaller implements Dispatcher.DispatchHandler {
  private abort: ((error?: Error) => void) | null = null;
  private done = false;
  private callerLeft = false;
  /** True while `pool.dispatch` runs; an error then is undici refusing the request itself. */
  dispatching = false;
  refusal: Error | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly answered: () => void,
    private readonly unreachable: (error: Error) => void,
  ) {
    res.once('close', () => {
      if (this.done) return;
      this.callerLeft = true;
      this.abort?.(new Error('the caller left'));
    });
  }

  /**
   * Undici calls this as the request is about to be written. One that waited for a connection
   * (all of them busy with a slow primary) and whose caller left meanwhile is not sent: a caller
   * that timed out and retried would otherwise have the primary answer both.
   */
  onConnect(abort: (error?: Error) => void): void {
    this.abort = abort;
    if (this.callerLeft) abort(new Error('the caller left before the primary was asked'));
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // 1xx: the final answer follows
    this.answered();
    const headers: string[] = [];
    for (let i = 0; i < rawHeaders.length; i += 2)
      headers.push(rawHeaders[i].toString('latin1'), rawHeaders[i + 1].toString('latin1'));
    this.res.writeHead(statusCode, endToEnd(headers));
    this.res.on('drain', resume);
    return true;
  }

  onData(chunk: Buffer): boolean {
    return this.res.write(chunk);
  }

  onComplete(): void {
    this.done = true;
    this.res.end();
  }

  onError(error: Error): void {
    if (this.dispatching) {
      this.done = true;
      this.refusal = error;
      return;
    }
    this.done = true;
    if (this.res.destroyed) return; // the caller left: nobody to answer
    if (this.res.headersSent) this.res.destroy();
    else this.unreachable(error);
  }
}

/**
 * The path to forward: an origin-form target as it is, an absolute-form one's path and query
 * (RFC 9112 3.2.2: a server must accept it); null for `*` and anything else.
 */
function originForm(target: string): string | null {
  if (target.startsWith('/')) return target;
  if (!/^https?:\/\//i.test(target)) return null;
  try {
    const url = new URL(target);
    return `${url.pathname}${url.search}`;
  } catch {
    return null;
  }
}

/** `/.../chat/completions`, with or without a query. */
function isChatCompletions(url: string): boolean {
  const query = url.indexOf('?');
  return (query < 0 ? url : url.slice(0, query)).endsWith('/chat/completions');
}

/**
 * The shadow gateway: an OpenAI-compatible reverse proxy for production clients. Contract:
 * - every request goes to the primary and the primary's answer goes back unchanged (status,
 *   headers but hop-by-hop ones, body bytes), streamed chunk by chunk as it arrives;
 * - a sampled copy of each chat completion request, redacted with the default rules (emails,
 *   keys, numbers), is sent to the mirror receiver after the primary was asked, on the side: the
 *   forwarding loop only decides (pause, sample, pending cap) and hands the body's bytes to the
 *   copy thread (`MirrorThread`), which parses, redacts, posts and counts;
 * - fail-open: whatever happens to the copy (receiver down, slow, refusing, the cap reached, the
 *   copy thread dead or stuck), the caller's answer is the primary's; only the primary being
 *   unreachable yields a 502. A dead copy thread is restarted (1 s, doubling to 30 s): meanwhile
 *   copies are dropped and counted, and those it held count as failed;
 * - the kill switch (`setMirroring(false)`) stops copying within milliseconds, the proxy stays up.
 */
export async function startShadowGateway(options: ShadowGatewayOptions): Promise<ShadowGateway> {
  const primary = new URL(options.primary);
  const prefix = primary.pathname.replace(/\/+$/, '');
  const newPool = () =>
    new Pool(primary.origin, {
      connections: options.maxPrimaryConnections ?? 256,
      pipelining: 1,
      keepAliveTimeout: 30_000,
    });
  let pool = newPool();
  const stats = { forwarded: 0, primaryUnreachable: 0, refused: 0 };
  // Started before listening: a copy thread that cannot start is the caller's error, not a
  // gateway that silently copies nothing.
  const mirror = options.mirror
    ? await MirrorThread.start({
        url: options.mirror.url,
        token: options.mirror.token ?? null,
        copyTimeoutMs: options.copyTimeoutMs ?? 2000,
        pauseOnNotLiveMs: PAUSE_ON_NOT_LIVE_MS,
        rules: RedactionRulesSchema.parse({}),
        sampleRate: options.sampleRate ?? 1,
        maxPending: options.maxPendingCopies ?? 64,
        ...(options.copyRestartBackoffMs ? { restartBackoffMs: options.copyRestartBackoffMs } : {}),
      })
    : null;

  const maxBuffered = options.maxBufferedBodyBytes ?? 1024 * 1024;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req, maxBuffered);
    const answered = () => {
      stats.forwarded++;
      if (mirror === null || req.method !== 'POST' || !isChatCompletions(req.url ?? '')) return;
      if (Buffer.isBuffer(body)) mirror.offer(body, headerValue(req.rawHeaders, 'x-fathom-intent'));
      else mirror.offerTooLarge();
    };
    const unreachable = (error: Error) => {
      stats.primaryUnreachable++;
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { message: `primary unreachable: ${error.message}`, type: 'bad_gateway' } }),
      );
    };
    const refuse = (why: string) => {
      stats.refused++;
      if (!Buffer.isBuffer(body)) body.destroy();
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: { message: `the gateway cannot forward this request: ${why}`, type: 'bad_request' },
        }),
      );
    };
    const path = originForm(req.url ?? '/');
    if (path === null)
      return refuse(`request target ${JSON.stringify(req.url?.slice(0, 100))} is not a path`);
    const handler = new ForwardToCaller(res, answered, unreachable);
    handler.dispatching = true;
    pool.dispatch(
      {
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        path: `${prefix}${path}`,
        headers: endToEnd(req.rawHeaders),
        body: !Buffer.isBuffer(body) || body.length > 0 ? body : undefined,
      },
      handler,
    );
    handler.dispatching = false;
    if (handler.refusal === null) return;
    // undici refused the request before sending it, and (7.30) left the connection it picked
    // marked busy: 256 such requests stalled every later one, production's included. A fresh
    // pool takes the next requests; the old one finishes those it has.
    const stalled = pool;
    pool = newPool();
    void stalled.close().catch(() => undefined);
    refuse(handler.refusal.message);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const tunnels = new Set<Duplex>();
  server.on('upgrade', (req: IncomingMessage, caller: Duplex, head: Buffer) => {
    const path = originForm(req.url ?? '/');
    if (path === null) {
      stats.refused++;
      caller.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    tunnel(req, `${prefix}${path}`, caller, head);
  });

  /**
   * An upgrade (a WebSocket: OpenAI's Realtime API) is a connection of its own, not a request:
   * the caller's request line and headers go to the primary as they came (its host for the
   * caller's `Host`), then bytes flow both ways untouched until either side closes. Nothing of
   * it is copied. Before, the gateway stripped the upgrade headers and the primary answered 426.
   */
  function tunnel(req: IncomingMessage, path: string, caller: Duplex, head: Buffer): void {
    const port = Number(primary.port) || (primary.protocol === 'https:' ? 443 : 80);
    const host = primary.hostname.replace(/^\[|\]$/g, '');
    const upstream: Socket =
      primary.protocol === 'https:'
        ? connectTls({ host, port, servername: host })
        : connectTcp({ host, port });
    tunnels.add(caller);
    let open = false;
    let answered = false;
    const end = () => {
      tunnels.delete(caller);
      upstream.destroy();
      if (!answered) caller.destroy(); // a 502 written is left to flush
    };
    upstream.once(primary.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
      open = true;
      stats.forwarded++;
      let lines = `${req.method} ${path} HTTP/1.1\r\nhost: ${primary.host}\r\n`;
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        if (req.rawHeaders[i].toLowerCase() !== 'host')
          lines += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
      upstream.write(`${lines}\r\n`);
      if (head.length > 0) upstream.write(head);
      caller.pipe(upstream).pipe(caller);
    });
    upstream.once('error', (error: Error) => {
      if (open) return end();
      stats.primaryUnreachable++;
      answered = true;
      tunnels.delete(caller);
      const body = JSON.stringify({
        error: { message: `primary unreachable: ${error.message}`, type: 'bad_gateway' },
      });
      caller.end(
        `HTTP/1.1 502 Bad Gateway\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    });
    upstream.once('close', end);
    caller.once('error', end);
    caller.once('close', end);
  }
  server.keepAliveTimeout = 30_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => resolve());
    });
  } catch (error) {
    await Promise.all([pool.close(), mirror?.close()]);
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${host}:${port}`,
    stats: () => ({
      ...stats,
      ...(mirror?.stats() ?? {
        copied: 0,
        copiesDropped: 0,
        copiesTooLarge: 0,
        copiesFailed: 0,
        pausedUntil: 0,
        copyWorkerDeaths: 0,
        mirroring: false,
        copyThreadUp: false,
      }),
    }),
    setMirroring: async (enabled) => {
      if (mirror === null && enabled) throw new Error('shadow gateway: no mirror to copy to (a pure proxy)');
      await mirror?.setMirroring(enabled);
    },
    terminateCopyWorker: async () => mirror?.terminate(),
    closing: () => closing !== null,
    close: () =>
      (closing ??= (async () => {
        server.closeAllConnections();
        for (const caller of tunnels) caller.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.all([pool.close(), mirror?.close()]);
      })()),
  };
}
