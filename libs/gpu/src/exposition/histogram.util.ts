import type { PromFamily } from './prometheus-text.parser';

export interface HistogramBucket {
  /** Upper bound (inclusive); `Infinity` for the `+Inf` bucket. */
  readonly le: number;
  /** Cumulative count of observations <= le. */
  readonly count: number;
}

/** One labelled series of a histogram family (the `le` label removed). */
export interface HistogramSeries {
  readonly labels: Readonly<Record<string, string>>;
  /** Sorted by `le`. */
  readonly buckets: HistogramBucket[];
  readonly sum?: number;
  readonly count?: number;
}

/** Groups a histogram family's `_bucket`/`_sum`/`_count` samples into series by label set. */
export function histogramSeries(family: PromFamily): HistogramSeries[] {
  const byKey = new Map<
    string,
    { labels: Record<string, string>; buckets: HistogramBucket[]; sum?: number; count?: number }
  >();
  for (const sample of family.samples) {
    const { le, ...labels } = sample.labels;
    const key = labelKey(labels);
    let series = byKey.get(key);
    if (!series) {
      series = { labels, buckets: [] };
      byKey.set(key, series);
    }
    if (sample.name === `${family.name}_bucket` && le !== undefined) {
      const bound = le === '+Inf' ? Infinity : Number(le);
      if (!Number.isNaN(bound)) series.buckets.push({ le: bound, count: sample.value });
    } else if (sample.name === `${family.name}_sum`) {
      series.sum = sample.value;
    } else if (sample.name === `${family.name}_count`) {
      series.count = sample.value;
    }
  }
  return [...byKey.values()].map((series) => ({
    ...series,
    buckets: series.buckets.sort((a, b) => a.le - b.le),
  }));
}

/**
 * Estimates the q-quantile from cumulative buckets the way PromQL's `histogram_quantile` does
 * (linear interpolation inside the bucket, lower bound 0 for the first one). Undefined when the
 * `+Inf` bucket is missing (a truncated exposition: the tail is unknown) or nothing was observed.
 */
export function histogramQuantile(q: number, buckets: readonly HistogramBucket[]): number | undefined {
  if (!(q >= 0 && q <= 1) || buckets.length === 0) return undefined;
  const last = buckets[buckets.length - 1];
  if (last.le !== Infinity) return undefined;
  const total = last.count;
  if (!(total > 0)) return undefined;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [index, bucket] of buckets.entries()) {
    if (bucket.count >= rank) {
      if (bucket.le === Infinity) {
        // Like PromQL: the answer is the highest finite bound.
        return buckets.length > 1 ? buckets[buckets.length - 2].le : undefined;
      }
      // PromQL: the first bucket's lower bound is 0 unless its upper bound is not positive.
      if (index === 0 && bucket.le <= 0) return bucket.le;
      const inBucket = bucket.count - lowerCount;
      if (inBucket <= 0) return bucket.le;
      return lowerBound + (bucket.le - lowerBound) * ((rank - lowerCount) / inBucket);
    }
    lowerBound = bucket.le;
    lowerCount = bucket.count;
  }
  return undefined;
}

/** Bucket-wise difference of two cumulative snapshots of the same series (a window's histogram). */
export function histogramDelta(
  previous: readonly HistogramBucket[],
  current: readonly HistogramBucket[],
): HistogramBucket[] | undefined {
  if (previous.length !== current.length) return undefined;
  const out: HistogramBucket[] = [];
  for (let i = 0; i < current.length; i++) {
    if (previous[i].le !== current[i].le) return undefined;
    const delta = current[i].count - previous[i].count;
    // A drop in any cumulative bucket means the server restarted: the window is the current one.
    if (delta < 0) return [...current];
    out.push({ le: current[i].le, count: delta });
  }
  return out;
}

export function labelKey(labels: Readonly<Record<string, string>>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',');
}
