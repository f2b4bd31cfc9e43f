import * as hdr from 'hdr-histogram-js';
import type { Histogram } from 'hdr-histogram-js';

/** Histogram values are microseconds, 1 us to 1 hour, 3 significant digits (0.1 % value error). */
export const HISTOGRAM_MAX_US = 3_600_000_000;

export function newLatencyHistogram(): Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: HISTOGRAM_MAX_US,
    numberOfSignificantValueDigits: 3,
    bitBucketSize: 32,
  });
}

/** Records a latency given in ms; values are clamped to the trackable range rather than throwing. */
export function recordMs(histogram: Histogram, ms: number): void {
  const us = Math.round(ms * 1000);
  histogram.recordValue(us < 1 ? 1 : us > HISTOGRAM_MAX_US ? HISTOGRAM_MAX_US : us);
}

export function encodeHistogram(histogram: Histogram): string {
  return hdr.encodeIntoCompressedBase64(histogram);
}

export function decodeHistogram(base64: string): Histogram {
  return hdr.decodeFromCompressedBase64(base64, 32);
}

/** Summary of one latency distribution, in milliseconds; null fields when there is no value. */
export interface Quantiles {
  count: number;
  mean: number | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
  /** The campaign's `report.percentiles`, keyed `p90`, `p99.9`, ... (absent when none asked). */
  percentiles?: Record<string, number | null>;
}

/** `p50`, `p99.9`: the key a percentile is reported under. */
export function percentileKey(percentile: number): string {
  return `p${Number(percentile.toFixed(4))}`;
}

/**
 * Count, mean, P50/P95/P99 and max in ms, plus `percentiles` (each in (0, 100]) when given: the
 * campaign's `report.percentiles`, read from the same histogram.
 */
export function quantilesFromHistogram(
  histogram: Histogram | string,
  percentiles?: readonly number[],
): Quantiles {
  const h = typeof histogram === 'string' ? decodeHistogram(histogram) : histogram;
  const count = h.totalCount;
  const extra = percentiles?.length
    ? Object.fromEntries(
        percentiles.map((p) => [percentileKey(p), count === 0 ? null : h.getValueAtPercentile(p) / 1000]),
      )
    : undefined;
  if (count === 0) {
    const empty: Quantiles = { count: 0, mean: null, p50: null, p95: null, p99: null, max: null };
    if (extra) empty.percentiles = extra;
    return empty;
  }
  const quantiles: Quantiles = {
    count,
    mean: h.mean / 1000,
    p50: h.getValueAtPercentile(50) / 1000,
    p95: h.getValueAtPercentile(95) / 1000,
    p99: h.getValueAtPercentile(99) / 1000,
    max: h.maxValue / 1000,
  };
  if (extra) quantiles.percentiles = extra;
  return quantiles;
}
