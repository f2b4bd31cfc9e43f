import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool, request as undiciRequest } from 'undici';
import { RedactionRulesSchema } from '@fathom/contracts';
import { compileRedactor, redactDeep } from '../redaction.util';

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

export interface ShadowGatewayStats {
  /** Requests forwarded to the primary, and those the primary could not be reached for (502). */
  forwarded: number;
  primaryUnreachable: number;
  /** Copies accepted by the receiver, dropped at the cap, failed (receiver down, refused, timed out). */
  copied: number;
  copiesDropped: number;
  copiesFailed: number;
  /** Copying paused because the receiver said the campaign is not running (404): until then, ms. */
  pausedUntil: number;
}

export interface ShadowGateway {
  readonly url: string;
  stats(): ShadowGatewayStats;
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

/**
 * The shadow gateway: an OpenAI-compatible reverse proxy for production clients. Contract:
 * - every request goes to the primary and the primary's answer goes back unchanged (status,
 *   headers but hop-by-hop ones, body bytes), streamed chunk by chunk as it arrives;
 * - a sampled copy of each chat completion request, redacted with the default rules (emails,
 *   keys, numbers), is sent to the mirror receiver after the primary was asked, on the side;
 * - fail-open: whatever happens to the copy (receiver down, slow, refusing, the cap reached),
 *   the caller's answer is the primary's; only the primary being unreachable yields a 502.
 */
export async function startShadowGateway(options: ShadowGatewayOptions): Promise<ShadowGateway> {
  const primary = new URL(options.primary);
  const prefix = primary.pathname.replace(/\/+$/, '');
  const pool = new Pool(primary.origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });
  const redact = compileRedactor(RedactionRulesSchema.parse({}));
  const sampleRate = options.sampleRate ?? 1;
  const maxPending = options.maxPendingCopies ?? 64;
  const copyTimeoutMs = options.copyTimeoutMs ?? 2000;
  const stats: ShadowGatewayStats = {
    forwarded: 0,
    primaryUnreachable: 0,
    copied: 0,
    copiesDropped: 0,
    copiesFailed: 0,
    pausedUntil: 0,
  };
  let pending = 0;

  const copy = (body: Buffer, headers: IncomingHttpHeaders): void => {
    const mirror = options.mirror;
    if (!mirror || Date.now() < stats.pausedUntil || Math.random() >= sampleRate) return;
    if (pending >= maxPending) {
      stats.copiesDropped++;
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return; // not JSON: the primary will say so to the caller; nothing to compare
    }
    pending++;
    const intent = headers['x-fathom-intent'];
    undiciRequest(mirror.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(mirror.token ? { authorization: `Bearer ${mirror.token}` } : {}),
        ...(typeof intent === 'string' ? { 'x-fathom-intent': intent } : {}),
      },
      body: JSON.stringify(redactDeep(parsed, redact)),
      signal: AbortSignal.timeout(copyTimeoutMs),
    })
      .then(async (answer) => {
        await answer.body.dump();
        if (answer.statusCode === 202) stats.copied++;
        else {
          stats.copiesFailed++;
          if (answer.statusCode === 404) stats.pausedUntil = Date.now() + PAUSE_ON_NOT_LIVE_MS;
        }
      })
      .catch(() => void stats.copiesFailed++)
      .finally(() => void pending--);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
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
    if (req.method === 'POST' && (req.url ?? '').split('?')[0].endsWith('/chat/completions')) {
      setImmediate(copy, body, req.headers);
    }
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
    }
    res.writeHead(answer.statusCode, out);
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    stats: () => ({ ...stats }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await pool.close();
    },
  };
}
