import type { RunSummary } from '@fathom/contracts';

/**
 * The analyzer's verdict on whether a run measured the target (`RunReport.validity`, added by
 * the analyzer). Read structurally so that a producer that does not send it is still understood.
 */
export interface ReportedValidity {
  readonly valid: boolean;
  readonly reasons: ReadonlyArray<{ readonly kind: string; readonly detail: string }>;
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

/** Why a finished run's measurement is invalid (a rerun reason), or null when it is valid. */
export function measurementInvalidity(
  summary: RunSummary,
  validity: ReportedValidity | undefined,
): string | null {
  if (summary.status !== 'completed') return null;
  if (validity) {
    if (validity.valid) return null;
    const reasons = validity.reasons.map((r) => `${r.kind}: ${r.detail}`);
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

/**
 * Exponential backoff on top of the policy's cool-down: the first rerun of a campaign waits only
 * the cool-down; with n reruns already started the next waits at least base x 2^(n-1), capped,
 * so repeated triggers space out.
 */
export function rerunBackoffMs(rerunsStarted: number, baseMs: number, maxMs: number): number {
  if (baseMs <= 0 || rerunsStarted <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(rerunsStarted - 1, 30));
}
