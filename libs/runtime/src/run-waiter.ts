const TERMINAL = new Set(['completed', 'partial', 'failed', 'aborted']);

/**
 * Polls a run until it reached a terminal state and carries its summary (an aborted or failed
 * run may end without one). Throws after `timeoutMs`.
 */
export async function waitForRun<R extends { status: string; summary: unknown }>(
  runs: { get(id: string): Promise<R | null> },
  runId: string,
  options: { timeoutMs: number; pollMs?: number; graceWithoutSummaryMs?: number },
): Promise<R> {
  const deadline = Date.now() + options.timeoutMs;
  let terminalSince: number | null = null;
  for (;;) {
    const run = await runs.get(runId);
    if (run && TERMINAL.has(run.status)) {
      if (run.summary) return run;
      terminalSince ??= Date.now();
      if (Date.now() - terminalSince > (options.graceWithoutSummaryMs ?? 20_000)) return run;
    }
    if (Date.now() > deadline) throw new Error(`run ${runId} did not finish within ${options.timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
  }
}
