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
}

export function quantilesFromHistogram(histogram: Histogram | string): Quantiles {
  const h = typeof histogram === 'string' ? decodeHistogram(histogram) : histogram;
  const count = h.totalCount;
  if (count === 0) return { count: 0, mean: null, p50: null, p95: null, p99: null, max: null };
  return {
    count,
    mean: h.mean / 1000,
    p50: h.getValueAtPercentile(50) / 1000,
    p95: h.getValueAtPercentile(95) / 1000,
    p99: h.getValueAtPercentile(99) / 1000,
    max: h.maxValue / 1000,
  };
}
