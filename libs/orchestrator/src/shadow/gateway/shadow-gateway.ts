import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
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
}

/** The gateway's counts: its own forwarding, and its copy thread's (see `MirrorCounts`). */
export interface ShadowGatewayStats extends MirrorCounts {
  /** Requests forwarded to the primary, and those the primary could not be reached for (502). */
  forwarded: number;
  primaryUnreachable: number;
}

export interface ShadowGateway {
  readonly url: string;
  /** Copy counts may lag the copy thread by a turn of its event loop. */
  stats(): ShadowGatewayStats;
  /**
   * The kill switch. false: no copy leaves after this resolves (it resolves once the copy thread
   * is ended, in milliseconds; copies on their way are abandoned, counted dropped); the gateway
   * is a pure proxy. true: copying starts again (resolves once the thread is ready).
   */
  setMirroring(enabled: boolean): Promise<void>;
  /** Ends the copy thread as a crash would (it is restarted after 1 s). For operators and tests. */
  terminateCopyWorker(): Promise<void>;
  /** Stops listening, ends the copy thread, closes the connections to the primary. */
  close(): Promise<void>;
}

/** Hop-by-hop headers (RFC 9110 7.6.1) are the connection's, never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
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

/** The headers of `from` but hop-by-hop ones and undefined values, in their order. */
function endToEnd(from: IncomingHttpHeaders | Record<string, string | string[] | undefined>) {
  const to: Record<string, string | string[]> = {};
  for (const name in from) {
    const value = from[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) to[name] = value;
  }
  return to;
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
  const pool = new Pool(primary.origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });
  const stats = { forwarded: 0, primaryUnreachable: 0 };
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
      })
    : null;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const headers = endToEnd(req.headers);
    let answer;
    try {
      answer = await pool.request({
        method: (req.method ?? 'GET') as 'GET',
        path: `${prefix}${req.url ?? '/'}`,
        headers,
        body: body.length > 0 ? body : undefined,
      });
    } catch (error) {
      stats.primaryUnreachable++;
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { message: `primary unreachable: ${(error as Error).message}`, type: 'bad_gateway' },
          }),
        );
      }
      return;
    }
    stats.forwarded++;
    if (mirror !== null && req.method === 'POST' && isChatCompletions(req.url ?? '')) {
      const intent = req.headers['x-fathom-intent'];
      mirror.offer(body, typeof intent === 'string' ? intent : null);
    }
    res.writeHead(answer.statusCode, endToEnd(answer.headers));
    try {
      for await (const chunk of answer.body) res.write(chunk);
      res.end();
    } catch {
      res.destroy(); // the primary broke off mid-answer: so does the caller's connection
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
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
  return {
    url: `http://${host}:${port}`,
    stats: () => ({
      ...stats,
      ...(mirror?.stats() ?? {
        copied: 0,
        copiesDropped: 0,
        copiesFailed: 0,
        pausedUntil: 0,
        copyWorkerDeaths: 0,
        mirroring: false,
      }),
    }),
    setMirroring: async (enabled) => {
      if (mirror === null && enabled) throw new Error('shadow gateway: no mirror to copy to (a pure proxy)');
      await mirror?.setMirroring(enabled);
    },
    terminateCopyWorker: async () => mirror?.terminate(),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([pool.close(), mirror?.close()]);
    },
  };
}
