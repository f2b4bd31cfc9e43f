import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { RunReportDocument } from '@fathom/analysis';
import type { EmbeddedFathom } from '@fathom/runtime';
import { CliExit } from '../cli-exit';
import { ExitCode } from '../exit-code';
import type { PrintableRun } from '../format/run-summary.format';
import { OUT_HELP, collectOut, parseOutputs, writeOutputs, type OutputSpec } from './report-outputs';
import { loadReport } from './report-source';
import { addRunOverrideOptions, applyRunOverrides, type RunOverrides } from './run-overrides';
import { addProgressOptions, remoteProgress, watchRunProgress, type ProgressFlags } from './run-progress';

interface RunOptions extends RunOverrides, ProgressFlags {
  api?: string;
  token?: string;
  json?: boolean;
  dataDir?: string;
  timeoutMs: string;
  verbose?: boolean;
  out?: string[];
}

/**
 * `fathom run FILE`: one campaign from a YAML file, its summary printed. Exit codes: `ExitCode`
 * (0 every SLO held, 1 an SLO failed, 2 could not run, 3 aborted, 130 interrupted). Ctrl-C on an
 * embedded run aborts it, prints its partial summary and exits 130; a second Ctrl-C quits at once.
 */
export function registerRunCommand(program: Command): void {
  const command = program
    .command('run')
    .description('run one campaign from a YAML file and print its summary')
    .argument('<file>', 'campaign file (YAML or JSON)')
    .option('--api <url>', 'send it to a running orchestrator instead of running embedded')
    .option('--token <token>', 'bearer token for --api (default: $FATHOM_API_TOKEN)')
    .option('--json', 'print the run (with its summary) as JSON')
    .option(
      '--data-dir <dir>',
      'keep the embedded database here (default: in memory; a run over 10 minutes: a temporary directory, removed at the end)',
    )
    .option('--timeout-ms <ms>', 'give up waiting after this long beyond the campaign duration', '120000')
    .option('--verbose', "show the services' logs")
    .option('--out <format=path>', OUT_HELP, collectOut)
    .action(async (file: string, options: RunOptions) => {
      const outputs = parseOutputs(options.out ?? []);
      const { readCampaignFile } = await import('./campaign-file');
      const input = applyRunOverrides(await readCampaignFile(file), options);
      const report = new ReportWriter(outputs);
      const { run, interrupted } = options.api
        ? { run: await runRemote(input, options, report), interrupted: false }
        : await runEmbedded(input, options, report);
      const name = (input as { name?: string }).name;
      const { formatRunSummary } = await import('../format/run-summary.format');
      process.stdout.write(`${options.json ? JSON.stringify(run, null, 2) : formatRunSummary(run, name)}\n`);
      for (const path of report.written) process.stderr.write(`wrote ${path}\n`);
      if (report.missing) process.stderr.write(`fathom: ${report.missing}\n`);
      process.exitCode = interrupted ? ExitCode.interrupted : exitCodeOf(run);
    });
  addRunOverrideOptions(command);
  addProgressOptions(command);
}

/**
 * Writes the `--out` files of a finished run from its report document, fetched where the run
 * happened (the embedded database before it closes, or the API). A run without a report (it
 * failed before the analyzer reported) writes nothing and says so; the exit code is the run's.
 */
class ReportWriter {
  written: string[] = [];
  missing: string | null = null;

  constructor(private readonly outputs: readonly OutputSpec[]) {}

  async write(runId: string, fetch: () => Promise<RunReportDocument | null>): Promise<void> {
    if (this.outputs.length === 0) return;
    const doc = await fetch().catch(() => null);
    if (!doc) {
      this.missing = `run ${runId} has no report: --out wrote nothing`;
      return;
    }
    this.written = await writeOutputs(this.outputs, doc);
  }
}

export function exitCodeOf(run: PrintableRun): number {
  if (run.status === 'aborted') return ExitCode.aborted;
  if (run.status !== 'completed') return ExitCode.couldNotRun;
  return run.summary?.slo.passed ? ExitCode.passed : ExitCode.sloFailed;
}

/** How long an interrupted run may take to bring its partial summary. */
const INTERRUPTED_SUMMARY_GRACE_MS = 10_000;

/**
 * A run planned longer than this keeps its throw-away database in a temporary directory instead
 * of memory: its stored events grow with its length (measured: 9.4 MB a minute at the default
 * record budget), and in memory they would grow the process with them for hours.
 */
export const IN_MEMORY_RUN_MAX_MS = 10 * 60_000;

/** The temporary directory a run without `--data-dir` keeps its database in, or null (memory). */
async function scratchDirFor(input: unknown, options: RunOptions): Promise<string | null> {
  if (options.dataDir !== undefined || durationOf(input) <= IN_MEMORY_RUN_MAX_MS) return null;
  return mkdtemp(join(tmpdir(), 'fathom-run-'));
}

function durationOf(input: unknown): number {
  const ms = (input as { load?: { durationMs?: unknown } }).load?.durationMs;
  return typeof ms === 'number' ? ms : 0;
}

function invalid(issues: Array<{ field: string; message: string }>): CliExit {
  return new CliExit(
    ExitCode.couldNotRun,
    `invalid campaign:\n${issues.map((i) => `  ${i.field}: ${i.message}`).join('\n')}`,
  );
}

async function runEmbedded(
  file: unknown,
  options: RunOptions,
  report: ReportWriter,
): Promise<{ run: PrintableRun; interrupted: boolean }> {
  const [
    { SecretResolutionError, stashSecrets },
    { RunProgressService },
    { CampaignValidationError, parseCampaign },
  ] = await Promise.all([
    import('@fathom/load'),
    import('@fathom/orchestrator'),
    import('@fathom/contracts'),
  ]);
  // The user's own secrets (values, their variables, their files): moved into this process's
  // environment, so only references reach the embedded services' storage and bus.
  const input = await stashSecrets(file, process.env).catch((error: unknown) => {
    throw error instanceof SecretResolutionError ? new CliExit(ExitCode.couldNotRun, error.message) : error;
  });
  // Refuse a bad file before paying for the embedded database's start.
  try {
    parseCampaign(input);
  } catch (error) {
    throw error instanceof CampaignValidationError ? invalid(error.issues) : error;
  }
  let runId: string | null = null;
  let interrupted = false;
  let fathom: EmbeddedFathom | null = null;
  const onInterrupt = () => {
    // Before the run exists there is nothing to abort; a second Ctrl-C quits at once.
    if (interrupted || runId === null || fathom === null) process.exit(ExitCode.interrupted);
    interrupted = true;
    process.stderr.write(
      'fathom: interrupted: aborting the run for its partial summary (Ctrl-C again quits)\n',
    );
    void fathom.campaigns.abort(runId, 'interrupted (Ctrl-C)').catch(() => undefined);
  };
  process.on('SIGINT', onInterrupt);
  const scratchDir = await scratchDirFor(input, options);
  // A second Ctrl-C exits at once, without the `finally` below.
  const removeScratch = () => {
    if (scratchDir !== null) rmSync(scratchDir, { recursive: true, force: true });
  };
  process.once('exit', removeScratch);
  try {
    const [{ startEmbedded, waitForRun }, { RunReportRepository }] = await Promise.all([
      import('@fathom/runtime'),
      import('@fathom/storage'),
    ]);
    if (scratchDir !== null && process.stderr.isTTY)
      process.stderr.write(
        `fathom: a run over ${IN_MEMORY_RUN_MAX_MS / 60_000} minutes keeps its database in ${scratchDir}, not in memory (removed at the end; --data-dir keeps it)\n`,
      );
    fathom = await startEmbedded({
      dataDir: options.dataDir ?? null,
      scratchDir,
      logLevels: options.verbose ? ['error', 'warn', 'log'] : ['error'],
      // Ctrl-C aborts the run (onInterrupt), then the app closes below.
      shutdownHooks: false,
    });
    // The engine's worker and the embedding model load before the run, not from its CPU.
    await fathom.warm();
    // The user's own files: the CLI may read any of them.
    const submitted = await fathom.campaigns
      .submit(input, 'cli', { localFiles: true })
      .catch((error: unknown) => {
        throw error instanceof CampaignValidationError ? invalid(error.issues) : error;
      });
    runId = submitted.runId;
    if (process.stderr.isTTY) process.stderr.write(`fathom: run ${runId} started (Ctrl-C aborts it)\n`);
    const app = fathom.fathom.app;
    const progress = watchRunProgress(options, () => app.get(RunProgressService).get(submitted.runId));
    let run: PrintableRun;
    try {
      run = await waitForRun(fathom.runs, runId, {
        timeoutMs: durationOf(input) + Number(options.timeoutMs),
        graceWithoutSummaryMs: INTERRUPTED_SUMMARY_GRACE_MS,
      }).catch((error: unknown) => {
        throw new CliExit(ExitCode.couldNotRun, (error as Error).message);
      });
    } finally {
      await progress.stop();
    }
    const id = runId;
    const database = fathom.database;
    await report.write(id, async () => {
      const stored = await new RunReportRepository(database).latest(id);
      return (stored?.document as unknown as RunReportDocument | undefined) ?? null;
    });
    return { run, interrupted };
  } finally {
    process.off('SIGINT', onInterrupt);
    await fathom?.close();
    removeScratch();
    process.off('exit', removeScratch);
  }
}

async function runRemote(input: unknown, options: RunOptions, report: ReportWriter): Promise<PrintableRun> {
  const base = options.api!.replace(/\/+$/, '');
  const token = options.token ?? process.env.FATHOM_API_TOKEN;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const [{ request }, { waitForRun }] = await Promise.all([import('undici'), import('@fathom/runtime')]);
  const created = await request(`${base}/v1/campaigns`, {
    method: 'POST',
    headers,
    body: JSON.stringify(input),
  }).catch((error: unknown) => {
    throw new CliExit(ExitCode.couldNotRun, `cannot reach the orchestrator at ${base}: ${reasonOf(error)}`);
  });
  const body = (await created.body.json()) as {
    runId?: string;
    issues?: Array<{ field: string; message: string }>;
    message?: string;
  };
  if (created.statusCode === 400 && body.issues) throw invalid(body.issues);
  if (created.statusCode !== 201 || !body.runId) {
    throw new CliExit(
      ExitCode.couldNotRun,
      `orchestrator answered ${created.statusCode}: ${body.message ?? JSON.stringify(body)}`,
    );
  }
  const runs = {
    get: async (id: string) => {
      // Reads need the token too when the orchestrator has one.
      const res = await request(`${base}/v1/runs/${id}`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        return null;
      }
      return (await res.body.json()) as PrintableRun;
    },
  };
  const progress = watchRunProgress(options, remoteProgress(base, body.runId));
  let run: PrintableRun;
  try {
    run = await waitForRun(runs, body.runId, {
      timeoutMs: durationOf(input) + Number(options.timeoutMs),
    }).catch((error: unknown) => {
      throw new CliExit(ExitCode.couldNotRun, reasonOf(error));
    });
  } finally {
    await progress.stop();
  }
  await report.write(body.runId, () => loadReport(body.runId!, { api: base, token }));
  return run;
}

function reasonOf(error: unknown): string {
  const e = error as Error & { code?: unknown; cause?: { code?: unknown } };
  // System and undici codes are strings; a DOMException's (a timeout's) is a number, not for users.
  const code = [e.code, e.cause?.code].find((c): c is string => typeof c === 'string');
  return `${code ? `${code} ` : ''}${e.message ?? String(error)}`;
}
