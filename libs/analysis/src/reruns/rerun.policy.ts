/**
 * Whether a tier or breaker change may start a rerun of a campaign. Reruns are bounded so that
 * no storm can start: at most `maxReruns` per campaign, never sooner than `cooldownMs` after
 * the previous run of the campaign ended, and one pending rerun at a time (requests while one
 * is pending are folded into it: the debounce).
 */
export interface RerunPolicyConfig {
  readonly maxReruns: number;
  readonly cooldownMs: number;
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
  return { start: true, delayMs: Math.max(0, readyAt - now) };
}

/**
 * An aborted run never starts a rerun, whatever it asked for while it ran: someone (a user, a
 * resolved alert) stopped it on purpose, and its last figures (cancelled requests, a cut-short
 * window) describe the abort, not the target.
 */
export function mayRerunAfter(runStatus: string): boolean {
  return runStatus !== 'aborted';
}
