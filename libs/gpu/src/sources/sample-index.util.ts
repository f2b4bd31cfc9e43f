import { histogramQuantile, histogramSeries, type HistogramSeries } from '../exposition/histogram.util';
import type { PromFamily, PromSample } from '../exposition/prometheus-text.parser';
import {
  LATENCY_QUANTILES,
  makeSample,
  type CanonicalMetric,
  type GpuSourceKind,
  type LatencyKind,
  type NormalisedSample,
} from '../model/gpu-sample.model';

/**
 * Samples indexed by their full sample name. Adapters look metrics up by sample name, not by
 * family, so they work whether or not the exposition has `# TYPE` lines (dcgm-exporter behind
 * some proxies has none) and whatever suffix convention (0.0.4 or OpenMetrics) it used.
 */
export type SampleIndex = ReadonlyMap<string, readonly PromSample[]>;

export function indexSamples(families: readonly PromFamily[]): SampleIndex {
  const index = new Map<string, PromSample[]>();
  for (const family of families) {
    for (const sample of family.samples) {
      const list = index.get(sample.name);
      if (list) list.push(sample);
      else index.set(sample.name, [sample]);
    }
  }
  return index;
}

export interface SeriesKey {
  readonly gpu: string;
  readonly instance: string | null;
}

/** Maps a sample's labels to its (gpu, instance) key; undefined skips the sample. */
export type KeyOf = (labels: Readonly<Record<string, string>>) => SeriesKey | undefined;

/**
 * Emits one canonical metric from the first of `names` present, per key. `sum` adds up series
 * that share a key (counters split by a label we drop, e.g. `finished_reason`); `first` keeps
 * the first (gauges).
 */
export function emitScalar(
  index: SampleIndex,
  source: GpuSourceKind,
  names: readonly string[],
  metric: CanonicalMetric,
  keyOf: KeyOf,
  options: { mode: 'sum' | 'first'; convert?: (value: number) => number | undefined },
): NormalisedSample[] {
  const out: NormalisedSample[] = [];
  const covered = new Set<string>();
  for (const name of names) {
    const samples = index.get(name);
    if (!samples) continue;
    const totals = new Map<string, { key: SeriesKey; value: number }>();
    for (const sample of samples) {
      const key = keyOf(sample.labels);
      if (!key) continue;
      const id = `${key.gpu}\u0000${key.instance ?? ''}`;
      if (covered.has(id)) continue; // a preferred name already gave this key
      const value = options.convert ? options.convert(sample.value) : sample.value;
      if (value === undefined || !Number.isFinite(value)) continue;
      const total = totals.get(id);
      if (!total) totals.set(id, { key, value });
      else if (options.mode === 'sum') total.value += value;
    }
    for (const [id, { key, value }] of totals) {
      covered.add(id);
      const sample = makeSample(source, key.gpu, key.instance, metric, value);
      if (sample) out.push(sample);
    }
  }
  return out;
}

/**
 * Emits `<kind>_sum_s`, `<kind>_count_total` and `<kind>_p50/p90/p99_s` from the first histogram
 * of `bases` present. `scaleToSeconds` converts the histogram's unit (1 for seconds, 1e-3 for ms).
 */
export function emitLatencyHistogram(
  index: SampleIndex,
  source: GpuSourceKind,
  bases: readonly string[],
  kind: LatencyKind,
  keyOf: KeyOf,
  scaleToSeconds = 1,
): NormalisedSample[] {
  const out: NormalisedSample[] = [];
  const covered = new Set<string>();
  for (const base of bases) {
    const samples = [`${base}_bucket`, `${base}_sum`, `${base}_count`].flatMap((n) => index.get(n) ?? []);
    if (samples.length === 0) continue;
    const seriesList: HistogramSeries[] = histogramSeries({ name: base, type: 'histogram', samples });
    const emittedHere = new Set<string>();
    for (const series of seriesList) {
      const key = keyOf(series.labels);
      if (!key) continue;
      const id = `${key.gpu}\u0000${key.instance ?? ''}`;
      if (covered.has(id) || emittedHere.has(id)) continue;
      emittedHere.add(id);
      const inf = series.buckets.find((b) => b.le === Infinity);
      const count = series.count ?? inf?.count;
      const push = (metric: string, value: number | undefined) => {
        const sample = makeSample(source, key.gpu, key.instance, metric as CanonicalMetric, value);
        if (sample) out.push(sample);
      };
      push(`${kind}_sum_s`, series.sum === undefined ? undefined : series.sum * scaleToSeconds);
      push(`${kind}_count_total`, count);
      const scaled = series.buckets.map((b) => ({ le: b.le * scaleToSeconds, count: b.count }));
      for (const q of LATENCY_QUANTILES) {
        push(`${kind}_p${Math.round(q * 100)}_s`, histogramQuantile(q, scaled));
      }
    }
    for (const id of emittedHere) covered.add(id);
  }
  return out;
}
