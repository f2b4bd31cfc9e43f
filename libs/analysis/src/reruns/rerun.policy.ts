import type { RunSummary } from '@fathom/contracts';

/**
 * When a finished run is rerun, all of it in one place; the orchestrator only gathers the facts
 * and stores the decision.
 * - Why: a change asked for during the run (tier, breaker) and/or an invalid measurement
 *   (`measurementInvalidity`), joined by `rerunReason`.
 * - Whether and when (`decideRerun`): at most `maxReruns` per campaign, one pending at a time
 *   (later asks fold into it: the debounce), never sooner than `cooldownMs` after the campaign's
 *   last run ended, nor sooner than the exponential backoff (`rerunBackoffMs`).
 */
export interface RerunPolicyConfig {
  readonly maxReruns: number;
  readonly cooldownMs: number;
  /** Backoff base and cap (ms); absent or 0: the cool-down alone. */
  readonly backoffMs?: number;
  readonly backoffMaxMs?: number;
}

export interface CampaignRunHistory {
  /** Reruns already started for this campaign (any trigger 'rerun'). */
  readonly rerunsStarted: number;
  /** A rerun is scheduled or running and has not ended. */
  readonly rerunPending: boolean;
  /** When the latest run of the campaign ended (epoch ms), null while it still runs. */
  readonly lastRunEndedAt: number | null;
}

export type RerunDecision =
  { readonly start: true; readonly delayMs: number } | { readonly start: false; readonly reason: string };

export function decideRerun(
  config: RerunPolicyConfig,
  history: CampaignRunHistory,
  now: number,
): RerunDecision {
  if (history.rerunPending) return { start: false, reason: 'a rerun is already pending' };
  if (history.rerunsStarted >= config.maxReruns) {
    return { start: false, reason: `rerun cap reached (${history.rerunsStarted}/${config.maxReruns})` };
  }
  if (history.lastRunEndedAt === null) return { start: false, reason: 'the run is still going' };
  const readyAt = history.lastRunEndedAt + config.cooldownMs;
  const backoffMs = rerunBackoffMs(history.rerunsStarted, config.backoffMs ?? 0, config.backoffMaxMs ?? 0);
  return { start: true, delayMs: Math.max(0, readyAt - now, backoffMs) };
}

/** A campaign's runs, counted (the storage's `RunRepository.tally`), as far as the policy reads them. */
export interface CampaignRunTally {
  /** Runs with trigger 'rerun', whatever their status. */
  readonly reruns: number;
  /** Of those, the ones not yet ended. */
  readonly openReruns: number;
  /** Runs of any trigger with no end yet. */
  readonly unended: number;
  /** The latest end among the campaign's runs (epoch ms), null when none has ended. */
  readonly lastEndedAt: number | null;
}

/** The history `decideRerun` reads, from the campaign's counted runs and whether a rerun waits. */
export function campaignRunHistory(runs: CampaignRunTally, rerunWaiting: boolean): CampaignRunHistory {
  return {
    rerunsStarted: runs.reruns,
    // Waiting for its time, or started and not yet ended.
    rerunPending: rerunWaiting || runs.openReruns > 0,
    lastRunEndedAt: runs.unended > 0 ? null : runs.lastEndedAt,
  };
}

/**
 * Exponential backoff on top of the cool-down: the first rerun of a campaign waits only the
 * cool-down; with n reruns already started the next waits at least base x 2^(n-1), capped, so
 * repeated triggers space out.
 */
export function rerunBackoffMs(rerunsStarted: number, baseMs: number, maxMs: number): number {
  if (baseMs <= 0 || rerunsStarted <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(rerunsStarted - 1, 30));
}

/**
 * The analyzer's verdict on whether a run measured the target (`RunReport.validity`, added by
 * the analyzer). Read structurally so that a producer that does not send it is still understood.
 */
export interface ReportedValidity {
  readonly valid: boolean;
  readonly reasons: ReadonlyArray<{
    readonly kind: string;
    readonly detail: string;
    readonly figures?: Readonly<Record<string, number>>;
  }>;
}

/**
 * Fallback bounds used only when the report carries no validity verdict. Our choice, not the
 * spec's: beyond 5 % of iterations dropped the generator, not the target, shaped the load; beyond
 * 5 % of responses whose client and server token counts disagree, per-token figures are unreliable.
 */
export const MAX_DROPPED_FRACTION = 0.05;
export const MAX_TOKEN_MISMATCH_FRACTION = 0.05;

/**
 * Why a finished run must not be rerun as it is, or null. A client-bound run (the generator, not
 * the target, limited it) rerun with the identical spec measures the same distortion again; the
 * run ends with the report's advice instead (lower the record budget, more shards, more cores).
 */
export function rerunRefusal(validity: ReportedValidity | undefined): string | null {
  const bound = validity?.reasons.find((r) => r.kind === 'client-bound');
  return bound ? `client-bound, no rerun of the identical spec: ${bound.detail}` : null;
}

/**
 * A run too short to reach a steady state (too few full windows; not one whose throughput
 * varied) is as short when rerun with the same duration: that invalidity asks for no rerun.
 */
function rerunCannotFix(reason: ReportedValidity['reasons'][number]): boolean {
  return (
    reason.kind === 'no-steady-state' && reason.figures !== undefined && reason.figures['cv'] === undefined
  );
}

/**
 * Why a finished run's measurement is invalid (a rerun reason), or null when it is valid or when
 * only a longer run could make it valid (`rerunCannotFix`).
 */
export function measurementInvalidity(
  summary: RunSummary,
  validity: ReportedValidity | undefined,
): string | null {
  if (summary.status !== 'completed') return null;
  if (validity) {
    if (validity.valid) return null;
    if (validity.reasons.length > 0 && validity.reasons.every(rerunCannotFix)) return null;
    const reasons = validity.reasons.filter((r) => !rerunCannotFix(r)).map((r) => `${r.kind}: ${r.detail}`);
    return `invalid measurement: ${reasons.length ? reasons.join('; ') : 'reported invalid'}`;
  }
  const attempted = summary.requests + summary.dropped;
  if (attempted > 0 && summary.dropped / attempted > MAX_DROPPED_FRACTION) {
    return `invalid measurement: generator-bottleneck: ${summary.dropped} of ${attempted} iterations dropped (> ${MAX_DROPPED_FRACTION * 100} %)`;
  }
  const responses = summary.semantic.responses;
  if (responses > 0 && summary.semantic.tokenCountMismatches / responses > MAX_TOKEN_MISMATCH_FRACTION) {
    return `invalid measurement: token-count-mismatch: ${summary.semantic.tokenCountMismatches} of ${responses} responses (> ${MAX_TOKEN_MISMATCH_FRACTION * 100} %)`;
  }
  return null;
}

/** The reason a finished run is considered for a rerun, or null when nothing asks for one. */
export function rerunReason(requested: string | null, invalidity: string | null): string | null {
  const reasons = [requested, invalidity].filter((r): r is string => r !== null && r !== '');
  return reasons.length > 0 ? reasons.join('; ') : null;
}

/**
 * An aborted run never starts a rerun, whatever it asked for while it ran: someone (a user, a
 * resolved alert) stopped it on purpose, and its last figures (cancelled requests, a cut-short
 * window) describe the abort, not the target.
 */
export function mayRerunAfter(runStatus: string): boolean {
  return runStatus !== 'aborted';
}
