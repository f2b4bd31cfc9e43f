import type { RunStatus, RunSummary } from '@fathom/contracts';

export interface OpenRun {
  readonly id: string;
  readonly status: RunStatus;
  readonly createdAt: number;
  readonly startedAt: number | null;
}

export type Reconciliation =
  | { readonly action: 'keep' }
  | {
      readonly action: 'apply-report';
      readonly status: 'completed' | 'failed' | 'aborted';
      readonly reason: string | null;
      readonly at: number | null;
    }
  | { readonly action: 'fail'; readonly reason: string };

/**
 * What an open (pending or running) run should become, from what storage holds: the analyzer's
 * stored report decides when there is one (the orchestrator may have died before it consumed
 * the report event); otherwise a run past its planned end plus `graceMs` is failed with the
 * reason, since nothing is running it any more; otherwise it stays as it is.
 */
export function reconcileOpenRun(
  run: OpenRun,
  plannedDurationMs: number | null,
  report: RunSummary | null,
  now: number,
  graceMs: number,
): Reconciliation {
  if (report && report.status !== 'pending' && report.status !== 'running') {
    return { action: 'apply-report', status: report.status, reason: report.reason, at: report.endedAt };
  }
  const anchor = run.startedAt ?? run.createdAt;
  const deadline = anchor + (plannedDurationMs ?? 0) + graceMs;
  if (now < deadline) return { action: 'keep' };
  const since = run.startedAt === null ? 'created' : 'started';
  return {
    action: 'fail',
    reason:
      `no report ${Math.round((now - anchor) / 1000)} s after the run ${since} ` +
      `(planned ${Math.round((plannedDurationMs ?? 0) / 1000)} s + ${Math.round(graceMs / 1000)} s grace): ` +
      'its orchestrator or load-generator stopped while it was ' +
      run.status,
  };
}
