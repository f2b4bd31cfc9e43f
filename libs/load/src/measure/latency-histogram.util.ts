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
  recordUs(histogram, us < 1 ? 1 : us > HISTOGRAM_MAX_US ? HISTOGRAM_MAX_US : us);
}

/**
 * The fields of hdr-histogram-js 3's JsHistogram (what `newLatencyHistogram` builds) that
 * `recordValue` updates. Not in its typings; the spec checks this path against `recordValue`.
 */
interface JsHistogramFields {
  unitMagnitude: number;
  subBucketHalfCountMagnitude: number;
  countsArrayLength: number;
  maxValue: number;
  minNonZeroValue: number;
  _totalCount: number;
  _counts: unknown;
}

/**
 * `histogram.recordValue(us)` for an integer `us` in [1, 2^32), the same bucket and the same
 * count, max, min and total: the bucket from `Math.clz32` and shifts rather than the library's
 * `log2`/`pow`/`floor` (three of each per value; the engine records three values per request,
 * and they were ~3 % of its CPU). Histograms of another shape (unit magnitude, counts array) go
 * through `recordValue`.
 */
function recordUs(histogram: Histogram, us: number): void {
  const h = histogram as unknown as JsHistogramFields;
  const counts = h._counts;
  if (h.unitMagnitude !== 0 || !(counts instanceof Uint32Array)) {
    histogram.recordValue(us);
    return;
  }
  const half = h.subBucketHalfCountMagnitude;
  const bucket = Math.max(31 - Math.clz32(us) - half, 0);
  const index = (bucket << half) + (us >>> bucket);
  if (index >= h.countsArrayLength) {
    histogram.recordValue(us); // out of range: the library's own error
    return;
  }
  counts[index]++;
  if (us > h.maxValue) h.maxValue = us;
  if (us < h.minNonZeroValue) h.minNonZeroValue = us;
  h._totalCount++;
}

export function encodeHistogram(histogram: Histogram): string {
  return hdr.encodeIntoCompressedBase64(histogram);
}

export function decodeHistogram(base64: string): Histogram {
  return hdr.decodeFromCompressedBase64(base64, 32);
}

/**
 * A latency histogram's non-empty buckets only: what a window's histogram holds once decoded, in
 * kilobytes where the decoded histogram is a 92 KB counts array (23,552 buckets of the
 * `newLatencyHistogram` geometry) whatever it holds. For histograms kept long (the analyzer's
 * live windows) and merged often; `addSparse` merges one into a dense histogram exactly.
 */
export interface SparseHistogram {
  /** Bucket indexes in the dense counts array, ascending. */
  readonly indexes: Uint16Array;
  readonly counts: Float64Array;
}

/** What the sparse form reaches of hdr-histogram-js's JsHistogram (every latency histogram is one). */
interface DenseCounts {
  readonly countsArrayLength: number;
  getCountAtIndex(index: number): number;
  addToCountAtIndex(index: number, value: number): void;
  establishInternalTackingValues(): void;
}

const dense = (histogram: Histogram) => histogram as unknown as DenseCounts;

/** The `newLatencyHistogram` geometry's buckets: indexes fit in 16 bits. */
const LATENCY_BUCKETS = dense(newLatencyHistogram()).countsArrayLength;

/** Decodes an encoded latency histogram (`encodeHistogram`) to its non-empty buckets. */
export function decodeSparseHistogram(base64: string): SparseHistogram {
  const scratch = dense(decodeHistogram(base64));
  if (scratch.countsArrayLength !== LATENCY_BUCKETS || LATENCY_BUCKETS > 0x10000)
    throw new RangeError(`not a latency histogram: ${scratch.countsArrayLength} buckets`);
  let filled = 0;
  for (let i = 0; i < LATENCY_BUCKETS; i++) if (scratch.getCountAtIndex(i) > 0) filled++;
  const indexes = new Uint16Array(filled);
  const counts = new Float64Array(filled);
  for (let i = 0, k = 0; i < LATENCY_BUCKETS; i++) {
    const count = scratch.getCountAtIndex(i);
    if (count === 0) continue;
    indexes[k] = i;
    counts[k++] = count;
  }
  return { indexes, counts };
}

/**
 * Adds the sparse histograms to `into` (a dense one of the `newLatencyHistogram` geometry, e.g.
 * fresh or `reset()`), with the count, min and max that adding their dense forms gives.
 */
export function addSparse(into: Histogram, sparse: readonly SparseHistogram[]): void {
  const target = dense(into);
  if (target.countsArrayLength !== LATENCY_BUCKETS)
    throw new RangeError(`not a latency histogram: ${target.countsArrayLength} buckets`);
  for (const { indexes, counts } of sparse)
    for (let k = 0; k < indexes.length; k++) target.addToCountAtIndex(indexes[k], counts[k]);
  // Total, min and max from the counts: as `add` sets them from each decoded histogram's own.
  target.establishInternalTackingValues();
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

/** What `binCountsMs` walks: hdr-histogram-js's JsHistogram iterator (every decoded histogram has it). */
interface RecordedValues {
  medianEquivalentValue(value: number): number;
  recordedValuesIterator: {
    reset(): void;
    hasNext(): boolean;
    next(): { valueIteratedTo: number; countAtValueIteratedTo: number };
  };
}

/**
 * Exact counts of the recorded values per bin, the bins given by ascending edges in ms:
 * bin i holds [edges[i], edges[i + 1]); values below the first edge count in bin 0 and values at
 * or above the last edge in the last bin. Each recorded value is taken at its histogram bucket's
 * top (0.1 % resolution).
 */
export function binCountsMs(histogram: Histogram, edgesMs: readonly number[]): number[] {
  const bins = Math.max(0, edgesMs.length - 1);
  const counts = new Array<number>(bins).fill(0);
  if (bins === 0) return counts;
  const it = (histogram as unknown as RecordedValues).recordedValuesIterator;
  it.reset();
  while (it.hasNext()) {
    const step = it.next();
    const ms = step.valueIteratedTo / 1000;
    let lo = 0;
    let hi = bins - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (edgesMs[mid] <= ms) lo = mid;
      else hi = mid - 1;
    }
    counts[lo] += step.countAtValueIteratedTo;
  }
  return counts;
}

/**
 * P50, P95, P99 and max (ms) without the mean: hdr-histogram-js computes `mean` with its
 * recorded-values iterator, about 50 times slower than a percentile scan, which dominates when a
 * report takes the quantiles of hundreds of windows.
 */
export function tailQuantilesMs(histogram: Histogram): Omit<Quantiles, 'count' | 'mean'> {
  if (histogram.totalCount === 0) return { p50: null, p95: null, p99: null, max: null };
  return {
    p50: histogram.getValueAtPercentile(50) / 1000,
    p95: histogram.getValueAtPercentile(95) / 1000,
    p99: histogram.getValueAtPercentile(99) / 1000,
    max: histogram.maxValue / 1000,
  };
}

/**
 * How many recorded values are at or below each bound (microseconds, ascending): the cumulative
 * `le` buckets of a Prometheus histogram, from an HDR one (each value taken at its bucket's top,
 * 0.1 %). Unlike `binCountsMs` (half-open bins), a value equal to a bound counts in it. `sumUs`
 * is the histogram's sum as hdr-histogram-js's `mean * totalCount` gives it (each value at its
 * bucket's median), from the same walk: `mean` would walk every bucket a second time.
 */
export function countsAtOrBelowUs(
  histogram: Histogram,
  boundsUs: readonly number[],
): { counts: number[]; sumUs: number } {
  const counts = boundsUs.map(() => 0);
  let sumUs = 0;
  const walked = histogram as unknown as RecordedValues;
  const it = walked.recordedValuesIterator;
  it.reset();
  while (it.hasNext()) {
    const { valueIteratedTo, countAtValueIteratedTo } = it.next();
    sumUs += walked.medianEquivalentValue(valueIteratedTo) * countAtValueIteratedTo;
    for (let i = boundsUs.length - 1; i >= 0 && valueIteratedTo <= boundsUs[i]; i--)
      counts[i] += countAtValueIteratedTo;
  }
  return { counts, sumUs };
}
