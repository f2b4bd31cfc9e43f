import type { Command } from 'commander';
import type { RunProgress } from '@fathom/contracts';
import { ProgressReporter, type ProgressOutput } from '../progress/progress.reporter';

export interface ProgressFlags {
  quiet?: boolean;
}

export function addProgressOptions(command: Command): Command {
  return command.option('--quiet', 'show no live progress while the run goes (the summary is still printed)');
}

/** Starts showing the run's progress on `output` (stderr: stdout keeps only the summary); no-op with --quiet. */
export function watchRunProgress(
  flags: ProgressFlags,
  fetch: () => Promise<RunProgress | null>,
  output: ProgressOutput = process.stderr,
): { stop(): Promise<void> } {
  if (flags.quiet) return { stop: async () => undefined };
  return new ProgressReporter({ output, fetch }).start();
}

/** Progress from a running orchestrator: `GET /v1/runs/:id/progress`, checked against its schema. */
export function remoteProgress(base: string, runId: string): () => Promise<RunProgress | null> {
  return async () => {
    const [{ request }, { RunProgressSchema }] = await Promise.all([
      import('undici'),
      import('@fathom/contracts'),
    ]);
    const res = await request(`${base}/v1/runs/${encodeURIComponent(runId)}/progress`, {
      headersTimeout: 5000,
      bodyTimeout: 5000,
    });
    if (res.statusCode === 404) {
      await res.body.dump();
      return null;
    }
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`orchestrator answered ${res.statusCode}`);
    }
    const parsed = RunProgressSchema.safeParse(await res.body.json());
    if (!parsed.success) throw new Error(`unexpected progress body: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  };
}
