import type { Command } from 'commander';
import type { EmbeddedFathom } from '@fathom/runtime';
import type { SimTarget } from '@fathom/sim';
import type { CampaignSpecInput } from '@fathom/contracts';
import { CliExit } from '../cli-exit';

interface UpOptions {
  host: string;
  port: string;
  dataDir?: string;
  memory?: boolean;
  sim?: boolean;
  simPort: string;
  demo?: boolean;
  verbose?: boolean;
}

/**
 * `fathom up`: all five services in this process on the in-memory bus and embedded PostgreSQL.
 * `--demo` also starts the simulated target, runs one campaign against it, prints the summary
 * and exits (what `npm start` does).
 */
export function registerUpCommand(program: Command): void {
  program
    .command('up')
    .description('start all five services in one process (in-memory bus, embedded PostgreSQL)')
    .option('--host <host>', 'address of the REST API', '127.0.0.1')
    .option('--port <port>', 'port of the REST API', '7070')
    .option(
      '--data-dir <dir>',
      'embedded database directory (default: $FATHOM_DATA_DIR/db, else ~/.fathom/db)',
    )
    .option('--memory', 'keep the database in memory')
    .option('--sim', 'also start the simulated OpenAI-compatible target')
    .option('--sim-port <port>', 'port of the simulated target', '8000')
    .option('--demo', 'run a demo campaign against the simulated target, print its summary and exit')
    .option('--verbose', "show the services' logs")
    .action(async (options: UpOptions) => {
      requireTokenOffLoopback(options.host, process.env);
      if (options.demo) {
        await demo(options);
        return;
      }
      const [{ databaseConfigFromEnv }, { startEmbedded }, { startSimTarget }] = await Promise.all([
        import('@fathom/storage'),
        import('@fathom/runtime'),
        import('@fathom/sim'),
      ]);
      const fromEnv = databaseConfigFromEnv(process.env);
      if (fromEnv.kind === 'postgres') {
        process.stderr.write(
          'fathom up: DATABASE_URL is ignored; the embedded mode uses PGlite (run the services separately for PostgreSQL)\n',
        );
      }
      const dataDir = options.memory
        ? null
        : (options.dataDir ?? (fromEnv.kind === 'pglite' ? fromEnv.dataDir : null));
      const fathom = await startEmbedded({ dataDir, host: options.host, port: Number(options.port) });
      const sim = options.sim
        ? await startSimTarget({ port: Number(options.simPort), host: options.host })
        : null;
      process.stdout.write(
        `fathom up: API on ${fathom.url} (POST /v1/campaigns, GET /v1/runs/:id, /health, /metrics); database ${dataDir ?? 'in memory'}\n`,
      );
      if (sim) process.stdout.write(`simulated target on ${sim.url} (OpenAI API at ${sim.url}/v1)\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await sim?.close();
      await fathom.close();
    });
}

/** Whether `host` only listens on this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * The API reveals targets and prompts and starts load against any allowed host: reachable from
 * other machines, it must ask for a token.
 */
export function requireTokenOffLoopback(host: string, env: NodeJS.ProcessEnv): void {
  if (isLoopbackHost(host) || env.FATHOM_API_TOKEN) return;
  throw new CliExit(
    2,
    `refusing to serve the API on ${host} without a token: set FATHOM_API_TOKEN (clients send Authorization: Bearer <token>), or listen on 127.0.0.1`,
  );
}

/** The demo campaign: past the simulated target's knee, so the tiers have something to say. */
export function demoCampaign(sim: Pick<SimTarget, 'url'>): CampaignSpecInput {
  return {
    name: 'demo: chat against the simulated target',
    target: { baseUrl: `${sim.url}/v1`, metricsUrls: [`${sim.url}/metrics`, `${sim.url}/dcgm/metrics`] },
    scenario: {
      type: 'chat',
      prompts: [
        'Summarise the causes of the 1929 stock market crash in three sentences.',
        'Explain how a KV cache speeds up transformer decoding.',
        'Write a haiku about load testing.',
        'List three differences between TCP and UDP.',
      ],
      maxTokens: 48,
      logprobs: true,
      topLogprobs: 5,
    },
    load: { concurrency: 48, durationMs: 8000 },
    slo: { p99Ms: 4000, maxErrorRate: 0.01 },
    reruns: { maxReruns: 0, cooldownMs: 0 },
  };
}

async function demo(options: UpOptions): Promise<void> {
  const started = Date.now();
  let fathom: EmbeddedFathom | null = null;
  let sim: SimTarget | null = null;
  try {
    process.stdout.write(
      'Fathom demo: starting the five services (in-memory bus, embedded PostgreSQL) and a simulated LLM server\n',
    );
    const [{ startEmbedded, waitForRun }, { startSimTarget }, { formatRunSummary }] = await Promise.all([
      import('@fathom/runtime'),
      import('@fathom/sim'),
      import('../format/run-summary.format'),
    ]);
    const [embedded, target] = await Promise.all([
      startEmbedded({
        dataDir: null,
        host: options.host,
        port: 0,
        logLevels: options.verbose ? undefined : ['error'],
      }),
      startSimTarget({ port: 0, host: options.host }),
    ]);
    fathom = embedded;
    sim = target;
    const spec = demoCampaign(target);
    process.stdout.write(
      `Running "${spec.name}": ${spec.load.concurrency} concurrent streams for ${spec.load.durationMs / 1000} s against ${target.url}/v1\n`,
    );
    await embedded.warm();
    const { runId } = await embedded.campaigns.submit(spec, 'demo');
    const run = await waitForRun(embedded.runs, runId, { timeoutMs: spec.load.durationMs + 90_000 });
    process.stdout.write(`\n${formatRunSummary(run, spec.name)}\n\n`);
    process.stdout.write(
      `Done in ${((Date.now() - started) / 1000).toFixed(1)} s. Next: \`npx fathom up --sim\` and POST a campaign to http://127.0.0.1:7070/v1/campaigns, or \`npx fathom run examples/chat-smoke.yaml\`.\n`,
    );
    if (run.status !== 'completed') process.exitCode = 2;
  } finally {
    await sim?.close();
    await fathom?.close();
  }
}
