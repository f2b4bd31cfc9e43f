import type { TelemetryWindow } from '@fathom/contracts';
import { mergeWindows } from '@fathom/load';
import type { TierFigures } from './slo-tier.evaluator';

/**
 * Tier figures over the windows that started within `spanMs` before the newest one, merged
 * across generators. Latency uses the corrected end-to-end histogram: a stalled target must
 * not look fast because the generator waited for it.
 */
export function recentTierFigures(
  windows: readonly TelemetryWindow[],
  spanMs: number,
  breakerTripsPerMinute: number,
): TierFigures {
  if (!windows.length) return { requests: 0, availability: 1, p99Ms: null, breakerTripsPerMinute };
  const newest = Math.max(...windows.map((w) => w.windowStart));
  const recent = windows.filter((w) => w.windowStart > newest - spanMs);
  const merged = mergeWindows(recent);
  const { requests, errors } = merged;
  return {
    requests,
    availability: requests ? 1 - errors / requests : 1,
    p99Ms: merged.quantiles.correctedE2e.p99,
    breakerTripsPerMinute,
  };
}
