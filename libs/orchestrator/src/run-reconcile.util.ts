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
 * load-generator, and the plan is published on the next pass). A started run past its planned
 * end plus `graceMs` is failed with the reason, since nothing is running it any more. A run whose
 * plan went out but that no load-generator started is failed only `startGraceMs` after its plan
 * went out: a generator at its shard cap queues shards, and a burst of runs waits its turn there
 * (200 campaigns posted at once, 8 shards at a time, waited up to 150 s).
 */
export function reconcileOpenRun(
  run: OpenRun,
  plannedDurationMs: number | null,
  report: RunSummary | null,
  now: number,
  graceMs: number,
  startGraceMs: number,
): Reconciliation {
  if (report && report.status !== 'pending' && report.status !== 'running') {
    return { action: 'apply-report', status: report.status, reason: report.reason, at: report.endedAt };
  }
  if (run.status === 'pending' && run.planPublishedAt === null) return { action: 'keep' };
  const planned = Math.round((plannedDurationMs ?? 0) / 1000);
  if (run.startedAt === null) {
    const anchor = run.planPublishedAt ?? run.createdAt;
    if (now < anchor + startGraceMs) return { action: 'keep' };
    return {
      action: 'fail',
      reason:
        `no load-generator started it ${Math.round((now - anchor) / 1000)} s after its plan was published ` +
        `(start grace ${Math.round(startGraceMs / 1000)} s): none is running, or every one stayed at its shard cap`,
    };
  }
  const deadline = run.startedAt + (plannedDurationMs ?? 0) + graceMs;
  if (now < deadline) return { action: 'keep' };
  return {
    action: 'fail',
    reason:
      `no report ${Math.round((now - run.startedAt) / 1000)} s after the run started ` +
      `(planned ${planned} s + ${Math.round(graceMs / 1000)} s grace): ` +
      'its orchestrator or load-generator stopped while it was ' +
      run.status,
  };
}
