import type { RunStatus, RunSummary } from '@fathom/contracts';

export interface OpenRun {
  readonly id: string;
  readonly status: RunStatus;
  readonly createdAt: number;
  readonly startedAt: number | null;
  /** When its plan went to the load-generators; null while the plan is still owed. */
  readonly planPublishedAt: number | null;
}

export type Reconciliation =
  | { readonly action: 'keep' }
  | {
      readonly action: 'apply-report';
      readonly status: 'completed' | 'partial' | 'failed' | 'aborted';
      readonly reason: string | null;
      readonly at: number | null;
    }
  | { readonly action: 'fail'; readonly reason: string };

/**
 * What an open (pending or running) run should become, from what storage holds: the analyzer's
 * stored report decides when there is one (the orchestrator may have died before it consumed
 * the report event); a pending run whose plan is still owed stays (nothing was ever asked of a
 * load-generator, and the plan is published on the next pass); otherwise a run past its planned
 * end plus `graceMs`, counted from its start or else from its plan's publishing, is failed with
 * the reason, since nothing is running it any more; otherwise it stays as it is.
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
  if (run.status === 'pending' && run.planPublishedAt === null) return { action: 'keep' };
  const anchor = run.startedAt ?? run.planPublishedAt ?? run.createdAt;
  const deadline = anchor + (plannedDurationMs ?? 0) + graceMs;
  if (now < deadline) return { action: 'keep' };
  const since =
    run.startedAt !== null
      ? 'the run started'
      : run.planPublishedAt !== null
        ? "the run's plan was published"
        : 'the run was created';
  return {
    action: 'fail',
    reason:
      `no report ${Math.round((now - anchor) / 1000)} s after ${since} ` +
      `(planned ${Math.round((plannedDurationMs ?? 0) / 1000)} s + ${Math.round(graceMs / 1000)} s grace): ` +
      'its orchestrator or load-generator stopped while it was ' +
      run.status,
  };
}
