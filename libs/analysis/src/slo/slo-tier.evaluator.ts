import { SLO_BREACH_TIER } from '@fathom/contracts';

/**
 * SLO tiers (spec, "SLO tiers and circuit breaking"): ordered from best to worst; a run is in
 * the first tier whose every objective holds. Users may define their own list.
 */
export interface TierDefinition {
  readonly name: string;
  /** Minimum fraction of successful requests, e.g. 0.9995. */
  readonly availability: number;
  /** Maximum end-to-end P99 in milliseconds. */
  readonly p99Ms: number;
  /** Maximum breaker trips per minute on any one node (exclusive bound). */
  readonly maxBreakerTripsPerMinute: number;
}

export const DEFAULT_TIERS: readonly TierDefinition[] = [
  // SLO-0 normal: 99.95 %, P99 <= 800 ms, no breaker open (spec)
  { name: 'SLO-0', availability: 0.9995, p99Ms: 800, maxBreakerTripsPerMinute: 1 },
  // SLO-1 mild degradation: 99.5 %, P99 <= 1.2 s, entered at >= 1 trip/min on one node (spec)
  { name: 'SLO-1', availability: 0.995, p99Ms: 1200, maxBreakerTripsPerMinute: Number.POSITIVE_INFINITY },
];

/** The tier name given when no defined tier holds (reserved in the campaign spec's tiers). */
export const BREACH_TIER = SLO_BREACH_TIER;

export interface TierFigures {
  readonly requests: number;
  readonly availability: number;
  readonly p99Ms: number | null;
  readonly breakerTripsPerMinute: number;
}

export interface TierVerdict {
  readonly tier: string;
  /** Why the run is not in the tier above it (empty reason for the best tier). */
  readonly reason: string;
}

export function evaluateTier(
  figures: TierFigures,
  tiers: readonly TierDefinition[] = DEFAULT_TIERS,
): TierVerdict {
  const misses: string[] = [];
  for (const tier of tiers) {
    const miss = firstMiss(figures, tier);
    if (!miss) {
      return { tier: tier.name, reason: misses.length ? misses[misses.length - 1] : 'all objectives hold' };
    }
    misses.push(`${tier.name} missed: ${miss}`);
  }
  return { tier: BREACH_TIER, reason: misses.join('; ') };
}

function firstMiss(f: TierFigures, tier: TierDefinition): string | null {
  if (f.availability < tier.availability) {
    return `availability ${pct(f.availability)} < ${pct(tier.availability)}`;
  }
  if (f.p99Ms !== null && f.p99Ms > tier.p99Ms) {
    return `P99 ${f.p99Ms.toFixed(1)} ms > ${tier.p99Ms} ms`;
  }
  if (f.breakerTripsPerMinute >= tier.maxBreakerTripsPerMinute) {
    return `breaker trips ${f.breakerTripsPerMinute.toFixed(2)}/min >= ${tier.maxBreakerTripsPerMinute}/min`;
  }
  return null;
}

function pct(x: number): string {
  return `${(x * 100).toFixed(2)} %`;
}

/** Remembers each run's tier and reports changes only. */
export class TierTracker {
  private readonly current = new Map<string, string>();

  /** Returns the change, or null when the tier is unchanged. */
  observe(runId: string, verdict: TierVerdict): { from: string | null; to: string; reason: string } | null {
    const from = this.current.get(runId) ?? null;
    if (from === verdict.tier) return null;
    this.current.set(runId, verdict.tier);
    return { from, to: verdict.tier, reason: verdict.reason };
  }

  forget(runId: string): void {
    this.current.delete(runId);
  }
}
