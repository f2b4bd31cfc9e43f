import { Option, type Command } from 'commander';
import type { ShadowGatewayAdmin } from '@fathom/orchestrator';
import { CliExit } from '../cli-exit';

interface GatewayOptions {
  listen: string;
  adminListen?: string;
  campaign: string;
  primary?: string;
  api: string;
  token?: string;
  sampleRate: string;
  drainMs: string;
  primaryConnections: string;
  maxBufferedBody: string;
}

/**
 * The environment variables the gateway reads, one per flag (the flag wins), so that a container
 * needs no shell. deploy/verify.js checks docker-compose.yml's shadow-gateway against these.
 */
export const SHADOW_GATEWAY_ENV = {
  listen: 'FATHOM_SHADOW_LISTEN',
  adminListen: 'FATHOM_SHADOW_ADMIN_LISTEN',
  campaign: 'FATHOM_SHADOW_CAMPAIGN',
  primary: 'FATHOM_SHADOW_PRIMARY',
  api: 'FATHOM_API_URL',
  token: 'FATHOM_API_TOKEN',
  sampleRate: 'FATHOM_SHADOW_SAMPLE_RATE',
  drainMs: 'FATHOM_SHADOW_DRAIN_MS',
  primaryConnections: 'FATHOM_SHADOW_PRIMARY_CONNECTIONS',
  maxBufferedBody: 'FATHOM_SHADOW_MAX_BUFFERED_BODY',
} as const;

/** `host:port`, `[v6]:port` or `:port`. */
export function parseListen(listen: string, flag = '--listen'): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(listen);
  const port = match ? Number(match[3]) : NaN;
  if (!match || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new CliExit(2, `fathom shadow gateway: ${flag} wants host:port, got '${listen}'`);
  return { host: match[1] ?? (match[2] || '127.0.0.1'), port };
}

const DEFAULT_LISTEN = '127.0.0.1:9090';
const DEFAULT_API = 'http://127.0.0.1:7070';
const DEFAULT_SAMPLE_RATE = '1';
const DEFAULT_DRAIN_MS = '0';
const DEFAULT_PRIMARY_CONNECTIONS = '256';
const DEFAULT_MAX_BUFFERED_BODY = String(1024 * 1024);

/** An option set to '' (a compose variable left empty) is not set. */
const given = (value: string | undefined): string | undefined => (value?.trim() ? value : undefined);

/**
 * `fathom shadow gateway --listen 127.0.0.1:9090 --campaign ID [--primary URL] [--api URL]`:
 * production clients talk to the gateway as to the primary; a sampled, redacted copy of each
 * chat request goes to the live shadow campaign through the orchestrator's mirror receiver.
 * SIGUSR2 or `POST /mirroring` on the admin listener toggles copying (the kill switch; the proxy
 * stays up); SIGINT/SIGTERM end it. Every setting can come from the environment (SHADOW_GATEWAY_ENV).
 */
export function registerShadowCommand(program: Command): void {
  const shadow = program.command('shadow').description('Shadow testing from live traffic');
  const fromEnv = (flags: string, description: string, env: string) =>
    new Option(flags, description).env(env);
  shadow
    .command('gateway')
    .description(
      'Proxy production traffic to the primary unchanged (streamed), and mirror a sampled, redacted copy to a live shadow campaign',
    )
    .addOption(
      fromEnv('--listen <host:port>', 'where production clients connect', SHADOW_GATEWAY_ENV.listen)
        .default(DEFAULT_LISTEN)
        .makeOptionMandatory(),
    )
    .addOption(
      fromEnv(
        '--admin-listen <host:port>',
        'admin listener (off by default): GET /health, GET /metrics, POST /mirroring {"enabled":false}',
        SHADOW_GATEWAY_ENV.adminListen,
      ),
    )
    .addOption(
      fromEnv(
        '--campaign <id>',
        'the live shadow campaign (source type live) the copies feed',
        SHADOW_GATEWAY_ENV.campaign,
      ).makeOptionMandatory(),
    )
    .addOption(
      fromEnv(
        '--primary <url>',
        "the production server's origin (default: the campaign's primary, without /v1)",
        SHADOW_GATEWAY_ENV.primary,
      ),
    )
    .addOption(fromEnv('--api <url>', 'the orchestrator', SHADOW_GATEWAY_ENV.api).default(DEFAULT_API))
    .addOption(
      fromEnv(
        '--token <token>',
        "the orchestrator's API token: sent with each copy, and needed by POST /mirroring",
        SHADOW_GATEWAY_ENV.token,
      ),
    )
    .addOption(
      fromEnv(
        '--sample-rate <x>',
        'share of chat requests copied, 0..1',
        SHADOW_GATEWAY_ENV.sampleRate,
      ).default(DEFAULT_SAMPLE_RATE),
    )
    .addOption(
      fromEnv(
        '--drain-ms <ms>',
        'on SIGTERM/SIGINT, keep forwarding this long with /health at 503 before closing (a second signal closes at once)',
        SHADOW_GATEWAY_ENV.drainMs,
      ).default(DEFAULT_DRAIN_MS),
    )
    .addOption(
      fromEnv(
        '--primary-connections <n>',
        'connections to the primary at most; requests beyond wait for one (those whose caller left are never sent)',
        SHADOW_GATEWAY_ENV.primaryConnections,
      ).default(DEFAULT_PRIMARY_CONNECTIONS),
    )
    .addOption(
      fromEnv(
        '--max-buffered-body <bytes>',
        'request bodies up to this are read whole and may be copied; bigger ones are streamed to the primary and not copied',
        SHADOW_GATEWAY_ENV.maxBufferedBody,
      ).default(DEFAULT_MAX_BUFFERED_BODY),
    )
    .addHelpText(
      'after',
      `
A flag wins over its environment variable; a variable set to '' counts as unset.

Examples:
  fathom shadow gateway --listen 127.0.0.1:9090 --campaign 7f3c... --primary http://10.0.0.5:8000
  OPENAI_BASE_URL=http://127.0.0.1:9090/v1 your-app   # clients talk to the gateway instead of the primary
  kill -USR2 <gateway pid>   # kill switch: stop copying within a second (the proxy stays up); again: resume
  fathom shadow gateway --campaign 7f3c... --admin-listen 127.0.0.1:9464
  curl -X POST -H "authorization: Bearer $FATHOM_API_TOKEN" -d '{"enabled":false}' 127.0.0.1:9464/mirroring`,
    )
    .action(async (options: GatewayOptions) => {
      const campaign = given(options.campaign);
      if (!campaign)
        throw new CliExit(
          2,
          `fathom shadow gateway: --campaign (or ${SHADOW_GATEWAY_ENV.campaign}) is empty`,
        );
      const { host, port } = parseListen(given(options.listen) ?? DEFAULT_LISTEN);
      const adminListen = given(options.adminListen);
      const admin = adminListen ? parseListen(adminListen, '--admin-listen') : null;
      const sampleRate = Number(given(options.sampleRate) ?? DEFAULT_SAMPLE_RATE);
      if (!(sampleRate >= 0 && sampleRate <= 1))
        throw new CliExit(2, `fathom shadow gateway: --sample-rate wants 0..1, got '${options.sampleRate}'`);
      const drainMs = Number(given(options.drainMs) ?? DEFAULT_DRAIN_MS);
      if (!(Number.isInteger(drainMs) && drainMs >= 0 && drainMs <= 600_000))
        throw new CliExit(
          2,
          `fathom shadow gateway: --drain-ms wants whole milliseconds 0..600000, got '${options.drainMs}'`,
        );
      const wholeIn = (
        flag: string,
        value: string | undefined,
        fallback: string,
        min: number,
        max: number,
      ) => {
        const n = Number(value ?? fallback);
        if (!(Number.isInteger(n) && n >= min && n <= max))
          throw new CliExit(
            2,
            `fathom shadow gateway: ${flag} wants a whole number ${min}..${max}, got '${value}'`,
          );
        return n;
      };
      const maxPrimaryConnections = wholeIn(
        '--primary-connections',
        given(options.primaryConnections),
        DEFAULT_PRIMARY_CONNECTIONS,
        1,
        65_536,
      );
      const maxBufferedBodyBytes = wholeIn(
        '--max-buffered-body',
        given(options.maxBufferedBody),
        DEFAULT_MAX_BUFFERED_BODY,
        1024,
        1024 ** 3,
      );
      const api = (given(options.api) ?? DEFAULT_API).replace(/\/+$/, '');
      const token = given(options.token);
      const primary = given(options.primary) ?? (await campaignPrimary(api, campaign, token));
      const { startShadowGateway, startShadowGatewayAdmin } = await import('@fathom/orchestrator');
      const gateway = await startShadowGateway({
        host,
        port,
        primary,
        mirror: { url: `${api}/v1/shadow-campaigns/${encodeURIComponent(campaign)}/mirror`, token },
        sampleRate,
        maxPrimaryConnections,
        maxBufferedBodyBytes,
      });
      let adminServer: ShadowGatewayAdmin | null = null;
      let drainTimer: NodeJS.Timeout | null = null;
      try {
        if (admin)
          adminServer = await startShadowGatewayAdmin(gateway, {
            ...admin,
            token: token ?? null,
            draining: () => drainTimer !== null,
          });
      } catch (error) {
        await gateway.close();
        throw new CliExit(
          2,
          `fathom shadow gateway: --admin-listen ${adminListen}: ${(error as Error).message}`,
        );
      }
      process.stdout.write(
        `fathom shadow gateway on ${gateway.url} -> primary ${primary}, copies to ${api}\n`,
      );
      if (adminServer)
        process.stdout.write(`admin on ${adminServer.url} (GET /health, GET /metrics, POST /mirroring)\n`);
      // Every path of the gateway's own listener is the primary's: the kill switch is a signal,
      // or POST /mirroring on the admin listener. SIGUSR2 because Node keeps SIGUSR1 for its inspector.
      const toggleMirroring = (): void => {
        const enabled = !gateway.stats().mirroring;
        gateway.setMirroring(enabled).then(
          () =>
            process.stdout.write(
              enabled
                ? 'mirroring on (SIGUSR2)\n'
                : 'mirroring off (SIGUSR2): a pure proxy until the next SIGUSR2\n',
            ),
          (error: Error) =>
            process.stderr.write(`fathom shadow gateway: mirroring not switched: ${error.message}\n`),
        );
      };
      process.on('SIGUSR2', toggleMirroring);
      await new Promise<void>((resolve) => {
        let stopping = false;
        const close = (): void => {
          if (stopping) return;
          stopping = true;
          process.off('SIGINT', signalled);
          process.off('SIGTERM', signalled);
          process.off('SIGUSR2', toggleMirroring);
          if (drainTimer !== null) clearTimeout(drainTimer);
          const s = gateway.stats();
          process.stdout.write(
            `forwarded ${s.forwarded} (primary unreachable ${s.primaryUnreachable}), copied ${s.copied}, dropped ${s.copiesDropped}, failed ${s.copiesFailed} (copy thread restarts ${s.copyWorkerDeaths}), not copied as too large ${s.copiesTooLarge}, refused ${s.refused}\n`,
          );
          // The admin listener last: its /health answers 503 while the gateway closes.
          void gateway
            .close()
            .then(() => adminServer?.close())
            .then(resolve);
        };
        // With a drain period the first signal only turns /health to 503 (the load balancer
        // takes this replica out while it still forwards); the period's end, or a second
        // signal, closes.
        const signalled = (): void => {
          if (drainMs === 0 || drainTimer !== null) return close();
          process.stdout.write(
            `draining: /health answers 503, closing in ${drainMs} ms (signal again to close now)\n`,
          );
          drainTimer = setTimeout(close, drainMs);
        };
        process.on('SIGINT', signalled);
        process.on('SIGTERM', signalled);
      });
    });
}

async function campaignPrimary(api: string, id: string, token: string | undefined): Promise<string> {
  let answer: Response;
  try {
    answer = await fetch(`${api}/v1/shadow-campaigns/${encodeURIComponent(id)}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
  } catch (error) {
    throw new CliExit(
      2,
      `fathom shadow gateway: orchestrator at ${api} unreachable (${(error as Error).message}); or give --primary`,
    );
  }
  if (!answer.ok)
    throw new CliExit(
      2,
      `fathom shadow gateway: GET ${api}/v1/shadow-campaigns/${id}: HTTP ${answer.status}`,
    );
  const campaign = (await answer.json()) as { config?: { primary?: { baseUrl?: string } } };
  const base = campaign.config?.primary?.baseUrl;
  if (!base) throw new CliExit(2, `fathom shadow gateway: campaign ${id} names no primary; give --primary`);
  return base.replace(/\/v1\/?$/, '');
}
