import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge } from 'prom-client';
import { ShadowMirroringSwitchSchema } from '@fathom/contracts';
import { createMetricsRegistry } from '@fathom/observability';
import { bearerTokenMatches } from '../../http/bearer-token.util';
import type { ShadowGateway, ShadowGatewayStats } from './shadow-gateway';

export interface ShadowGatewayAdminOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** The bearer token `POST /mirroring` needs (the orchestrator's API token); null: none needed. */
  readonly token: string | null;
  /**
   * True while the gateway drains before it closes (it still forwards; `/health` already says
   * 503 so a load balancer takes it out first). Absent: never.
   */
  readonly draining?: () => boolean;
}

export interface ShadowGatewayAdmin {
  readonly url: string;
  close(): Promise<void>;
}

/** A kill-switch body is `{"enabled": true}` or so; anything longer is refused unread. */
const MAX_BODY_BYTES = 1024;

class AdminHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The shadow gateway's own counts as Prometheus series, read from `stats()` at each scrape, in a
 * registry of its own (labelled service="shadow-gateway", with the process's default metrics).
 */
function gatewayRegistry(gateway: ShadowGateway) {
  const registry = createMetricsRegistry('shadow-gateway');
  const counter = (name: string, help: string, read: (stats: ShadowGatewayStats) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read(gateway.stats()));
      },
    });
  counter(
    'fathom_shadow_gateway_forwarded_total',
    'Requests forwarded to the primary and answered by it',
    (s) => s.forwarded,
  );
  counter(
    'fathom_shadow_gateway_primary_unreachable_total',
    'Requests answered 502 because the primary could not be reached',
    (s) => s.primaryUnreachable,
  );
  counter(
    'fathom_shadow_gateway_refused_total',
    'Requests answered 400 because they could not be forwarded as sent (a * target, one the HTTP client refuses)',
    (s) => s.refused,
  );
  counter(
    'fathom_shadow_gateway_copy_thread_restarts_total',
    'Times the copy thread died and was restarted',
    (s) => s.copyWorkerDeaths,
  );
  new Counter({
    name: 'fathom_shadow_gateway_copies_total',
    help: 'Sampled copies by outcome: accepted by the receiver, dropped (cap, no thread, kill switch), failed, too large (body over the buffered-body cap)',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      const s = gateway.stats();
      this.reset();
      this.inc({ outcome: 'copied' }, s.copied);
      this.inc({ outcome: 'dropped' }, s.copiesDropped);
      this.inc({ outcome: 'failed' }, s.copiesFailed);
      this.inc({ outcome: 'too_large' }, s.copiesTooLarge);
    },
  });
  const gauge = (name: string, help: string, read: (stats: ShadowGatewayStats) => boolean) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read(gateway.stats()) ? 1 : 0);
      },
    });
  gauge(
    'fathom_shadow_gateway_mirroring',
    '1 while copying is on, 0 when the kill switch is off',
    (s) => s.mirroring,
  );
  gauge(
    'fathom_shadow_gateway_copy_thread_up',
    '1 while a copy thread is ready, 0 while it starts, restarts or is off',
    (s) => s.copyThreadUp,
  );
  return registry;
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** The request body as text; refuses (413) more than `MAX_BODY_BYTES` without buffering it. */
function readSmallBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.removeAllListeners('data');
        req.resume(); // drain, so that the 413 can go out on this connection
        reject(new AdminHttpError(413, `body over ${MAX_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

/**
 * The shadow gateway's admin listener, on an address of its own (every path of the gateway's
 * listener is the primary's). Routes; anything else is 404:
 * - `GET /health`: 200 `{status:"ok", mirroring, copyThreadUp}` while the gateway serves (a copy
 *   thread restarting leaves it 200: the proxy fails open); 503 `{status:"draining"}` while it
 *   drains before closing (it still forwards) and `{status:"closing"}` once `close` was called,
 *   so a load balancer stops sending;
 * - `GET /metrics`: Prometheus text (`fathom_shadow_gateway_*` and the process defaults);
 * - `POST /mirroring` `{"enabled": boolean}`: the kill switch, as SIGUSR2 (answers once it took
 *   effect: off in milliseconds); needs `Authorization: Bearer <token>` when a token is set.
 * A request it cannot make sense of gets a 4xx naming why; none ends the process.
 */
export async function startShadowGatewayAdmin(
  gateway: ShadowGateway,
  options: ShadowGatewayAdminOptions,
): Promise<ShadowGatewayAdmin> {
  const registry = gatewayRegistry(gateway);

  const switchMirroring = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (options.token !== null && !bearerTokenMatches(req.headers.authorization, options.token))
      throw new AdminHttpError(401, 'a valid bearer token is required (the orchestrator API token)');
    const text = await readSmallBody(req);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new AdminHttpError(
        400,
        `body is not JSON (${(error as Error).message}); send {"enabled": false}`,
      );
    }
    const parsed = ShadowMirroringSwitchSchema.safeParse(body);
    if (!parsed.success) {
      const why = parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
      throw new AdminHttpError(400, `${why}; send {"enabled": false} or {"enabled": true}`);
    }
    try {
      await gateway.setMirroring(parsed.data.enabled);
    } catch (error) {
      throw new AdminHttpError(409, (error as Error).message);
    }
    sendJson(res, 200, { mirroring: gateway.stats().mirroring });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const route = `${req.method} ${query < 0 ? url : url.slice(0, query)}`;
    if (route === 'GET /health') {
      const s = gateway.stats();
      if (gateway.closing()) return sendJson(res, 503, { status: 'closing' });
      if (options.draining?.()) return sendJson(res, 503, { status: 'draining' });
      return sendJson(res, 200, { status: 'ok', mirroring: s.mirroring, copyThreadUp: s.copyThreadUp });
    }
    if (route === 'GET /metrics') {
      const text = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType });
      res.end(text);
      return;
    }
    if (route === 'POST /mirroring') return switchMirroring(req, res);
    throw new AdminHttpError(404, `no ${route} here: GET /health, GET /metrics, POST /mirroring`);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: Error) => {
      if (res.headersSent) return void res.destroy();
      const status = error instanceof AdminHttpError ? error.status : 500;
      sendJson(
        res,
        status,
        { error: { message: error.message } },
        status === 401 ? { 'www-authenticate': 'Bearer' } : {},
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
