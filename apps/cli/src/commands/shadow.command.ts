import type { Command } from 'commander';
import { startShadowGateway } from '@fathom/orchestrator';
import { CliExit } from '../cli-exit';

interface GatewayOptions {
  listen: string;
  campaign: string;
  primary?: string;
  api: string;
  token?: string;
  sampleRate: string;
}

/** `host:port`, `[v6]:port` or `:port`. */
export function parseListen(listen: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(listen);
  const port = match ? Number(match[3]) : NaN;
  if (!match || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new CliExit(2, `fathom shadow gateway: --listen wants host:port, got '${listen}'`);
  return { host: match[1] ?? (match[2] || '127.0.0.1'), port };
}

/**
 * `fathom shadow gateway --listen 127.0.0.1:9090 --campaign ID [--primary URL] [--api URL]`:
 * production clients talk to the gateway as to the primary; a sampled, redacted copy of each
 * chat request goes to the live shadow campaign through the orchestrator's mirror receiver.
 * SIGUSR2 toggles copying (the kill switch; the proxy stays up); SIGINT/SIGTERM end it.
 */
export function registerShadowCommand(program: Command): void {
  const shadow = program.command('shadow').description('Shadow testing from live traffic');
  shadow
    .command('gateway')
    .description(
      'Proxy production traffic to the primary unchanged (streamed), and mirror a sampled, redacted copy to a live shadow campaign',
    )
    .requiredOption('--listen <host:port>', 'where production clients connect', '127.0.0.1:9090')
    .requiredOption('--campaign <id>', 'the live shadow campaign (source type live) the copies feed')
    .option(
      '--primary <url>',
      "the production server's origin (default: the campaign's primary, without /v1)",
    )
    .option('--api <url>', 'the orchestrator', 'http://127.0.0.1:7070')
    .option('--token <token>', 'bearer token for the orchestrator (default: $FATHOM_API_TOKEN)')
    .option('--sample-rate <x>', 'share of chat requests copied, 0..1', '1')
    .addHelpText(
      'after',
      `
Examples:
  fathom shadow gateway --listen 127.0.0.1:9090 --campaign 7f3c... --primary http://10.0.0.5:8000
  OPENAI_BASE_URL=http://127.0.0.1:9090/v1 your-app   # clients talk to the gateway instead of the primary
  kill -USR2 <gateway pid>   # kill switch: stop copying within a second (the proxy stays up); again: resume`,
    )
    .action(async (options: GatewayOptions) => {
      const { host, port } = parseListen(options.listen);
      const sampleRate = Number(options.sampleRate);
      if (!(sampleRate >= 0 && sampleRate <= 1))
        throw new CliExit(2, `fathom shadow gateway: --sample-rate wants 0..1, got '${options.sampleRate}'`);
      const api = options.api.replace(/\/+$/, '');
      const token = options.token ?? process.env.FATHOM_API_TOKEN;
      const primary = options.primary ?? (await campaignPrimary(api, options.campaign, token));
      const gateway = await startShadowGateway({
        host,
        port,
        primary,
        mirror: { url: `${api}/v1/shadow-campaigns/${encodeURIComponent(options.campaign)}/mirror`, token },
        sampleRate,
      });
      process.stdout.write(
        `fathom shadow gateway on ${gateway.url} -> primary ${primary}, copies to ${api}\n`,
      );
      // The kill switch is a signal, not an HTTP route: every path of the gateway is the primary's.
      // SIGUSR2 because Node keeps SIGUSR1 for its inspector.
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
        const stop = (): void => {
          process.off('SIGUSR2', toggleMirroring);
          const s = gateway.stats();
          process.stdout.write(
            `forwarded ${s.forwarded} (primary unreachable ${s.primaryUnreachable}), copied ${s.copied}, dropped ${s.copiesDropped}, failed ${s.copiesFailed} (copy thread restarts ${s.copyWorkerDeaths})\n`,
          );
          void gateway.close().then(resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
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
