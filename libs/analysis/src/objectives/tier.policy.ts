import type { RunTimeline } from '../evidence/run-timeline';
import { SLO_BREACH_TIER as BREACH_TIER } from '@fathom/contracts';
import {
  DEFAULT_TIER_SPECS,
  evaluateObjective,
  type ObjectiveContext,
  type ObjectiveResult,
  type TierSpec,
} from './objective.model';

/**
 * A pair of windows judged together (SRE workbook, "multiwindow, multi-burn-rate alerts"): the
 * long window makes a verdict significant, the short one lets it reset as soon as things
 * recover. An objective is missed when it is missed over both. For availability the pair also
 * names the burn rate (error-budget consumption speed) that counts as missed.
 */
export interface BurnWindow {
  readonly longMs: number;
  readonly shortMs: number;
  readonly burnRate: number;
}

export interface TierPolicyConfig {
  readonly tiers: readonly TierSpec[];
  readonly windows: readonly BurnWindow[];
  /** The run's first ms (connections, JIT, first scrapes) are not judged. */
  readonly warmupMs: number;
  /** Consecutive evaluations a worse tier must hold before the run enters it. */
  readonly enterAfter: number;
  /** Consecutive evaluations a better tier must hold before the run goes back to it. */
  readonly leaveAfter: number;
}

/**
 * Defaults sized for test runs of seconds to hours: a fast pair (5 s / 30 s) that catches an
 * onset within seconds, and a slow pair (30 s / 5 min) at the workbook's 6x burn for slow leaks.
 * Availability at burn rate 1 means "below the objective"; the workbook's 14.4x fast burn pages
 * a human, while a tier describes where the service is, so it uses the objective itself.
 */
export const DEFAULT_TIER_POLICY: TierPolicyConfig = {
  tiers: DEFAULT_TIER_SPECS,
  windows: [
    { shortMs: 5_000, longMs: 30_000, burnRate: 1 },
    { shortMs: 30_000, longMs: 300_000, burnRate: 6 },
  ],
  warmupMs: 2_000,
  enterAfter: 2,
  leaveAfter: 3,
};

/**
 * The policy a campaign's runs are judged by: its own tiers (`slo.tiers`, best first) when it
 * defines them, else the spec's SLO-0 and SLO-1; windows, warm-up and hysteresis are the defaults.
 */
export function tierPolicyFor(tiers: readonly TierSpec[] | undefined | null): TierPolicyConfig {
  return tiers?.length ? { ...DEFAULT_TIER_POLICY, tiers } : DEFAULT_TIER_POLICY;
}

export interface TierEvaluation {
  /** The best tier all of whose objectives hold now (before hysteresis). */
  readonly candidate: string;
  /** The first objective missed by the tier above the candidate, with its figures. */
  readonly miss: ObjectiveResult | null;
  readonly results: Record<string, ObjectiveResult[]>;
}

export interface TierChangeDecision {
  readonly from: string | null;
  readonly to: string;
  /** The objective that caused the change (for an improvement: the one that recovered). */
  readonly objective: string | null;
  readonly reason: string;
  readonly figures: Record<string, number>;
}

/**
 * Judges every tier's objectives over each window pair at `nowMs`; null during the warm-up and
 * until a request has ended after it, when there is nothing to judge: every objective would hold
 * for want of data (or, with a breaker already open, SLO-1 would be named while every request
 * failed), a tier no evidence supports.
 */
export function evaluateTiers(
  timeline: RunTimeline,
  nowMs: number,
  ctx: ObjectiveContext,
  config: TierPolicyConfig = DEFAULT_TIER_POLICY,
): TierEvaluation | null {
  const judgedFrom = (timeline.startMs ?? nowMs) + config.warmupMs;
  if (nowMs < judgedFrom) return null;
  const spans = config.windows.map((w) => ({
    w,
    short: timeline.span(Math.max(judgedFrom, nowMs - w.shortMs), nowMs),
    long: timeline.span(Math.max(judgedFrom, nowMs - w.longMs), nowMs),
  }));
  // No request ended since the warm-up: nothing to judge (a tier stays as it was).
  if (spans.every((s) => !s.long.requests)) return null;
  const results: Record<string, ObjectiveResult[]> = {};
  let miss: ObjectiveResult | null = null;
  for (const tier of config.tiers) {
    const tierResults: ObjectiveResult[] = [];
    let tierMiss: ObjectiveResult | null = null;
    for (const objective of tier.objectives) {
      let worst: ObjectiveResult | null = null;
      for (const { w, short, long } of spans) {
        const s = evaluateObjective(objective, short, ctx);
        const l = evaluateObjective(objective, long, ctx);
        const missed =
          objective.kind === 'availability'
            ? s.burnRate !== undefined &&
              l.burnRate !== undefined &&
              s.burnRate > w.burnRate &&
              l.burnRate > w.burnRate
            : !s.ok && !l.ok;
        if (missed && !worst)
          worst = {
            ...s,
            ok: false,
            text: `${s.text} over ${w.shortMs / 1000} s and ${l.text} over ${w.longMs / 1000} s`,
          };
      }
      const verdict = worst ?? { ...evaluateObjective(objective, spans[0].short, ctx), ok: true };
      tierResults.push(verdict);
      if (worst && !tierMiss) tierMiss = worst;
    }
    results[tier.name] = tierResults;
    if (!tierMiss) return { candidate: tier.name, miss, results };
    miss = { ...tierMiss, text: `${tier.name} missed: ${tierMiss.text}` };
  }
  return { candidate: BREACH_TIER, miss, results };
}

/**
 * Hysteresis over tier evaluations: a worse tier is entered after `enterAfter` evaluations in a
 * row say so, a better one after `leaveAfter`; the first evaluation assigns the tier at once.
 */
export class TierHysteresis {
  private current: string | null = null;
  private pending: { tier: string; count: number } | null = null;
  private lastRecovered: ObjectiveResult | null = null;

  constructor(
    private readonly config: Pick<
      TierPolicyConfig,
      'tiers' | 'enterAfter' | 'leaveAfter'
    > = DEFAULT_TIER_POLICY,
  ) {}

  get tier(): string | null {
    return this.current;
  }

  /**
   * Puts a restarted tracker where the run already is: `tier` is the last tier announced, and
   * `lastMiss` the objective that took the run into it when that was a worse tier (named again
   * when the run recovers). A streak of verdicts toward another tier starts over, so a change
   * under way when the process stopped is announced after `enterAfter`/`leaveAfter` evaluations
   * of the new process, once.
   */
  restore(tier: string, lastMiss: ObjectiveResult | null): void {
    this.current = tier;
    this.pending = null;
    this.lastRecovered = lastMiss;
  }

  observe(evaluation: TierEvaluation): TierChangeDecision | null {
    const rank = (name: string) => {
      const i = this.config.tiers.findIndex((t) => t.name === name);
      return i === -1 ? this.config.tiers.length : i;
    };
    const to = evaluation.candidate;
    if (this.current === null) {
      this.current = to;
      return decision(null, to, evaluation.miss);
    }
    if (to === this.current) {
      this.pending = null;
      return null;
    }
    const worse = rank(to) > rank(this.current);
    const needed = worse ? this.config.enterAfter : this.config.leaveAfter;
    // A run of verdicts in the same direction counts even if the exact tier differs a little.
    const sameDirection = this.pending !== null && rank(this.pending.tier) > rank(this.current) === worse;
    this.pending = { tier: to, count: sameDirection ? this.pending!.count + 1 : 1 };
    if (this.pending.count < needed) return null;
    const from = this.current;
    this.current = to;
    this.pending = null;
    if (worse) {
      this.lastRecovered = evaluation.miss;
      return decision(from, to, evaluation.miss);
    }
    const recovered = this.lastRecovered;
    return {
      from,
      to,
      objective: recovered?.objective ?? null,
      reason: `${from} objectives hold again for ${needed} evaluations${evaluation.miss ? `; ${evaluation.miss.text}` : ''}`,
      figures: recovered?.value != null ? { value: recovered.value, threshold: recovered.threshold } : {},
    };
  }
}

function decision(from: string | null, to: string, miss: ObjectiveResult | null): TierChangeDecision {
  return {
    from,
    to,
    objective: miss?.objective ?? null,
    reason: miss?.text ?? 'all objectives hold',
    figures:
      miss && miss.value !== null
        ? {
            value: miss.value,
            threshold: miss.threshold,
            ...(miss.burnRate !== undefined ? { burnRate: miss.burnRate } : {}),
          }
        : {},
  };
}
