import {
  minOf,
  maxOf,
  pushTo,
  type DetectorSignal,
  type TelemetryWindow,
  type TokenSample,
} from '@fathom/contracts';
import {
  binCountsMs,
  decodeHistogram,
  mergeWindows,
  quantilesFromHistogram,
  tailQuantilesMs,
} from '@fathom/load';
import { gpuSeries, type GpuPoint } from '../evidence/run-timeline';
import type { RecordDigest } from '../evidence/record-digest';
import {
  foldReportDigests,
  type DigestSample,
  type ReportDigestFigures,
  type ReportDigestOptions,
} from './report-digests.accumulator';
import type { GoodputCounts, TokenStatsFigures } from './token-stats.accumulator';

/**
 * Bounds of the time series a report carries, so a document stays around a megabyte however long
 * the run: windows are merged into at most `maxBuckets` buckets (1 s each up to 12 minutes),
 * per-request rows are thinned evenly to `maxRecords`, a detector keeps `examplesPerDetector`.
 */
export const RUN_SERIES_LIMITS = {
  maxBuckets: 720,
  maxRecords: 2000,
  examplesPerDetector: 5,
  distributionBins: 40,
} as const;

/** The GPU and server metrics of the report's panel (canonical names, `@fathom/gpu`). */
export const REPORT_GPU_METRICS = [
  'sm_active_ratio',
  'dram_active_ratio',
  'gpu_util_pct',
  'kv_cache_usage_ratio',
  'requests_running',
  'requests_waiting',
  'fb_used_mib',
  'fb_total_mib',
  'power_w',
] as const;

export interface SeriesLatency {
  readonly p50: number | null;
  readonly p95: number | null;
  readonly p99: number | null;
  readonly max: number | null;
}

/** One bucket of the run (every generator's windows whose middle is in it, merged exactly). */
export interface SeriesWindow {
  /** Bucket end, epoch ms. */
  readonly at: number;
  /**
   * Time its windows measured: the bucket's length, or what one generator's windows in it
   * covered when that is shorter (the run's last, cut-short window) or longer (a stalled tick).
   */
  readonly seconds: number;
  readonly requests: number;
  readonly errors: number;
  readonly errorClasses: Record<string, number>;
  readonly dropped: number;
  readonly late: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly requestsPerSec: number;
  readonly outputTokensPerSec: number;
  readonly latencyMs: {
    readonly e2e: SeriesLatency;
    readonly correctedE2e: SeriesLatency;
    readonly ttft: SeriesLatency;
    readonly itl: SeriesLatency;
  };
  /** Responses the semantic-monitor judged that ended in this bucket. */
  readonly judged: number;
  readonly good: number;
  readonly semanticallyGood: number;
  /** Request rate times the good share of the judged responses; null when none was judged. */
  readonly goodputPerSec: number | null;
  readonly semanticGoodputPerSec: number | null;
}

/** Counts per bin: bin i is [edges[i], edges[i + 1]). */
export interface Distribution {
  readonly unit: 'ms' | 'tokens';
  readonly edges: number[];
  readonly counts: number[];
  readonly total: number;
}

export interface SeriesTokenSample extends TokenSample {
  readonly requestId: string;
  readonly at: number;
  readonly meanEntropyBits: number | null;
}

/** One sampled request, as the CSV export writes it. */
export interface SeriesRecord {
  readonly requestId: string | null;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly lateMs: number;
  readonly status: number | null;
  readonly ok: boolean;
  readonly errorClass: string | null;
  readonly e2eMs: number;
  readonly correctedE2eMs: number | null;
  readonly ttftMs: number | null;
  readonly gapMaxMs: number | null;
  readonly gapMedianMs: number | null;
  readonly inputTokens: number | null;
  readonly outputTokens: number;
  readonly riskSegments: number | null;
  readonly maxWindowEntropyBits: number | null;
}

export interface SemanticFinding {
  readonly detector: string;
  readonly count: number;
  readonly bySeverity: Record<string, number>;
  readonly firstAt: number;
  readonly lastAt: number;
  readonly examples: {
    at: number;
    severity: string;
    message: string;
    figures: Record<string, number>;
    labels?: Record<string, string>;
  }[];
}

/** Everything over time the HTML report and the CSV export draw from. */
export interface RunSeries {
  readonly bucketMs: number;
  readonly windows: SeriesWindow[];
  readonly gpu: { metric: string; points: [number, number][] }[];
  readonly distributions: {
    readonly e2e: Distribution;
    readonly ttft: Distribution;
    readonly itl: Distribution;
    readonly outputTokens: Distribution;
  };
  readonly tokenSamples: SeriesTokenSample[];
  /** The run's sampled records, thinned evenly to `RUN_SERIES_LIMITS.maxRecords`. */
  readonly records: SeriesRecord[];
  readonly recordsTotal: number;
  /**
   * Present when the run had more digests than a report holds (`MAX_REPORT_DIGESTS`): `records`
   * were thinned from this seeded uniform sample of them, not from all `recordsTotal`. Every
   * other figure of the report counts them all.
   */
  readonly recordsSample?: DigestSample;
  /**
   * Present when some responses' goodput was placed in the bucket of their token stats' emission
   * (a telemetry flush after their end), not of their end: stats stored without their end, in a
   * run with more requests than the report's request-end index holds (`MAX_REPORT_DIGESTS`). That
   * many responses; every count is whole, only their bucket is approximate.
   */
  readonly tokenStatsPlacedByEmission?: number;
  readonly semanticFindings: SemanticFinding[];
}

export interface RunSeriesInput {
  readonly windows: readonly TelemetryWindow[];
  /** The run's digests, or their fold (`ReportDigestsAccumulator`). */
  readonly digests: readonly RecordDigest[] | ReportDigestFigures;
  readonly gpu: readonly GpuPoint[];
  readonly detectors: readonly DetectorSignal[];
  /**
   * The run's token stats folded (`TokenStatsAccumulator`, placed on these windows and digests):
   * goodput per bucket and the token samples. Null: none were reported.
   */
  readonly tokenStats: TokenStatsFigures | null;
}

/**
 * The series' buckets over a run's windows: from the first window's start, a whole number of the
 * generators' grid (the length they tick at), so that at most `maxBuckets` cover the run. Each
 * window has its measured length (a tick a millisecond late makes a window of 1001 ms, a stall one
 * of seconds, a shard's last one is cut short), and none of those is the grid: a median of 1001 ms
 * spaced the buckets 1001 ms apart, a millisecond more than a one-second window measured, and
 * drifting off the generators' ticks by a second every thousand. Windows stored before they
 * carried their grid fall back to the measured lengths' median.
 */
export function seriesBuckets(windows: readonly TelemetryWindow[]): { start: number; bucketMs: number } {
  const baseMs = windows.length ? medianOf(windows.map((w) => w.gridMs ?? w.windowMs)) : 1000;
  const start = windows.length ? minOf(windows.map((w) => w.windowStart)) : 0;
  const end = windows.length ? maxOf(windows.map((w) => w.windowStart + w.windowMs)) : 0;
  const bucketMs = Math.max(1, Math.ceil((end - start) / baseMs / RUN_SERIES_LIMITS.maxBuckets)) * baseMs;
  return { start, bucketMs };
}

/**
 * The bucket a window belongs to: the one holding its middle. (By its end, every window after a
 * tick that came a fraction of a millisecond late fell one bucket on, leaving an empty one.)
 */
export function bucketOfWindow(w: TelemetryWindow, start: number, bucketMs: number): number {
  return Math.max(0, Math.floor((w.windowStart + w.windowMs / 2 - start) / bucketMs));
}

/**
 * A bucket's request and output-token rates: each generator's counts over the time its windows
 * in the bucket measured (a tick closes one window per load phase, over the same span: counted
 * once), summed over generators; and that time (the longest generator's). Windows measure what
 * they cover: a cut-short last window or a stalled tick's long one is not taken for a bucket.
 */
function bucketRates(windows: readonly TelemetryWindow[]): {
  seconds: number;
  requestsPerSec: number;
  outputTokensPerSec: number;
} {
  const spans = new Map<string, { requests: number; outputTokens: number; ms: Map<number, number> }>();
  for (const w of windows) {
    const key = `${w.generatorId}\u0000${w.shard}`;
    let span = spans.get(key);
    if (span === undefined) spans.set(key, (span = { requests: 0, outputTokens: 0, ms: new Map() }));
    span.requests += w.requests;
    span.outputTokens += w.outputTokens;
    span.ms.set(w.windowStart, Math.max(span.ms.get(w.windowStart) ?? 0, w.windowMs));
  }
  let requestsPerSec = 0;
  let outputTokensPerSec = 0;
  let longestMs = 0;
  for (const span of spans.values()) {
    let ms = 0;
    for (const m of span.ms.values()) ms += m;
    requestsPerSec += (span.requests * 1000) / ms;
    outputTokensPerSec += (span.outputTokens * 1000) / ms;
    longestMs = Math.max(longestMs, ms);
  }
  return { seconds: longestMs / 1000, requestsPerSec, outputTokensPerSec };
}

/**
 * The run's request rate per bucket of `seriesBuckets` (every generator's and shard's windows in
 * it summed, each over the time its windows measured: `bucketRates`), in time order; a bucket
 * no window's middle fell in (a stalled tick's long window covers it from the next) is left out.
 */
export function requestRatesPerBucket(windows: readonly TelemetryWindow[]): number[] {
  const { start, bucketMs } = seriesBuckets(windows);
  return windowsByBucket(windows, start, bucketMs).map(
    ([, inBucket]) => bucketRates(inBucket).requestsPerSec,
  );
}

/** Each bucket's windows (those whose middle is in it: `bucketOfWindow`), in time order. */
function windowsByBucket(
  windows: readonly TelemetryWindow[],
  start: number,
  bucketMs: number,
): [number, TelemetryWindow[]][] {
  const byBucket = new Map<number, TelemetryWindow[]>();
  for (const w of windows) {
    const index = bucketOfWindow(w, start, bucketMs);
    const list = byBucket.get(index);
    if (list) list.push(w);
    else byBucket.set(index, [w]);
  }
  return [...byBucket].sort((a, b) => a[0] - b[0]);
}

function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** Builds the report's time series from the run's stored evidence. Pure. */
export function buildRunSeries(input: RunSeriesInput): RunSeries {
  const windows = dedupe(input.windows);
  const records = 'held' in input.digests ? input.digests : foldReportDigests(input.digests, SERIES_FOLD);
  const { start, bucketMs } = seriesBuckets(windows);
  const placed = input.tokenStats?.series;
  if (placed && (placed.start !== start || placed.bucketMs !== bucketMs))
    throw new RangeError(
      `token stats were bucketed from ${placed.start} every ${placed.bucketMs} ms, the run's windows from ${start} every ${bucketMs} ms: fold them on the same windows`,
    );
  const judgedByBucket: ReadonlyMap<number, GoodputCounts> = placed?.judgedByBucket ?? new Map();
  // Each window's histograms are decoded once into its bucket, and the buckets added up for the
  // whole run (mergeWindows per bucket and again for the whole decoded each twice and encoded).
  const whole = emptyHistograms();
  const series: SeriesWindow[] = [];
  for (const [index, inBucket] of windowsByBucket(windows, start, bucketMs)) {
    const bucket: Partial<Record<HistogramName, Histogram>> = {};
    let requests = 0;
    let errors = 0;
    let dropped = 0;
    let late = 0;
    let inputTokens = 0;
    let outputTokens = 0;
    const errorClasses: Record<string, number> = {};
    for (const w of inBucket) {
      requests += w.requests;
      errors += w.errors;
      dropped += w.dropped;
      late += w.late;
      inputTokens += w.inputTokens;
      outputTokens += w.outputTokens;
      for (const [k, n] of Object.entries(w.errorClasses)) errorClasses[k] = (errorClasses[k] ?? 0) + n;
      for (const name of HISTOGRAMS) {
        const decoded = decodeHistogram(w.histogramsUs[name]);
        if (bucket[name]) bucket[name].add(decoded);
        else bucket[name] = decoded;
      }
    }
    for (const name of HISTOGRAMS) whole[name].add(bucket[name]!);
    const { seconds, requestsPerSec: rps, outputTokensPerSec } = bucketRates(inBucket);
    const judged = judgedByBucket.get(index) ?? { judged: 0, good: 0, semanticallyGood: 0 };
    const lat = (name: HistogramName): SeriesLatency => tailQuantilesMs(bucket[name]!);
    series.push({
      at: start + (index + 1) * bucketMs,
      seconds,
      requests,
      errors,
      errorClasses,
      dropped,
      late,
      inputTokens,
      outputTokens,
      requestsPerSec: rps,
      outputTokensPerSec,
      latencyMs: { e2e: lat('e2e'), correctedE2e: lat('correctedE2e'), ttft: lat('ttft'), itl: lat('itl') },
      ...judged,
      goodputPerSec: judged.judged ? (rps * judged.good) / judged.judged : null,
      semanticGoodputPerSec: judged.judged ? (rps * judged.semanticallyGood) / judged.judged : null,
    });
  }
  return {
    bucketMs,
    windows: series,
    gpu: REPORT_GPU_METRICS.map((metric) => ({
      metric,
      points: gpuSeries(input.gpu, metric).map((p) => [p.at, p.value] as [number, number]),
    })).filter((s) => s.points.length > 0),
    distributions: {
      e2e: latencyDistribution(whole.e2e),
      ttft: latencyDistribution(whole.ttft),
      itl: latencyDistribution(whole.itl),
      outputTokens: tokenDistribution(records.outputTokens),
    },
    tokenSamples: [...(input.tokenStats?.tokenSamples ?? [])],
    records: thin(records.held, RUN_SERIES_LIMITS.maxRecords).map(recordRow),
    recordsTotal: records.total,
    ...(records.sample ? { recordsSample: records.sample } : {}),
    ...(input.tokenStats?.placedByEmission
      ? { tokenStatsPlacedByEmission: input.tokenStats.placedByEmission }
      : {}),
    semanticFindings: semanticFindings(input.detectors),
  };
}

/** The series reads the records, their count and output tokens of a fold: no objective, no stall bound. */
const SERIES_FOLD: ReportDigestOptions = {
  objectives: [],
  stallMs: Number.POSITIVE_INFINITY,
  spanFromMs: Number.NEGATIVE_INFINITY,
  maxDigests: Number.POSITIVE_INFINITY,
};

function dedupe(windows: readonly TelemetryWindow[]): TelemetryWindow[] {
  const byKey = new Map<string, TelemetryWindow>();
  for (const w of windows) byKey.set(`${w.generatorId}/${w.shard}/${w.seq}`, w);
  return [...byKey.values()];
}

type Histogram = ReturnType<typeof decodeHistogram>;
type HistogramName = 'e2e' | 'correctedE2e' | 'ttft' | 'itl';
const HISTOGRAMS: readonly HistogramName[] = ['e2e', 'correctedE2e', 'ttft', 'itl'];
const EMPTY_HISTOGRAM_US = mergeWindows([]).histogramsUs.e2e;

function emptyHistograms(): Record<HistogramName, Histogram> {
  return {
    e2e: decodeHistogram(EMPTY_HISTOGRAM_US),
    correctedE2e: decodeHistogram(EMPTY_HISTOGRAM_US),
    ttft: decodeHistogram(EMPTY_HISTOGRAM_US),
    itl: decodeHistogram(EMPTY_HISTOGRAM_US),
  };
}

/** Log-spaced bins from the smallest to the largest value (exact counts from the HDR histogram). */
function latencyDistribution(histogram: Histogram): Distribution {
  const q = quantilesFromHistogram(histogram);
  if (q.count === 0 || q.max === null) return { unit: 'ms', edges: [], counts: [], total: 0 };
  const min = Math.max(0.001, histogram.minNonZeroValue / 1000);
  const edges = logEdges(min, q.max * 1.001, RUN_SERIES_LIMITS.distributionBins);
  return { unit: 'ms', edges, counts: binCountsMs(histogram, edges), total: q.count };
}

/** From responses by output tokens (finite, >= 0: `ReportDigestFigures.outputTokens`). */
function tokenDistribution(byTokens: ReadonlyMap<number, number>): Distribution {
  if (byTokens.size === 0) return { unit: 'tokens', edges: [], counts: [], total: 0 };
  let max = 0;
  let total = 0;
  for (const [v, n] of byTokens) {
    max = Math.max(max, v);
    total += n;
  }
  const width = Math.max(1, Math.ceil((max + 1) / RUN_SERIES_LIMITS.distributionBins));
  const bins = Math.ceil((max + 1) / width);
  const edges = Array.from({ length: bins + 1 }, (_, i) => i * width);
  const counts = new Array<number>(bins).fill(0);
  for (const [v, n] of byTokens) counts[Math.min(bins - 1, Math.floor(v / width))] += n;
  return { unit: 'tokens', edges, counts, total };
}

function logEdges(min: number, max: number, bins: number): number[] {
  if (max <= min) return [min, min * 1.001 + 0.001];
  const ratio = Math.pow(max / min, 1 / bins);
  return Array.from({ length: bins + 1 }, (_, i) => min * Math.pow(ratio, i));
}

/** Every k-th item so that at most `limit` remain, first and spread evenly over the run. */
function thin<T>(items: readonly T[], limit: number): T[] {
  if (items.length <= limit) return [...items];
  const step = items.length / limit;
  return Array.from({ length: limit }, (_, i) => items[Math.floor(i * step)]);
}

function recordRow(d: RecordDigest): SeriesRecord {
  return {
    requestId: d.requestId ?? null,
    startedAt: d.startedAt,
    endedAt: d.at,
    lateMs: d.lateMs,
    status: d.status ?? null,
    ok: d.ok,
    errorClass: d.errorClass,
    e2eMs: d.e2eMs,
    correctedE2eMs: d.correctedE2eMs ?? null,
    ttftMs: d.ttftMs,
    gapMaxMs: d.gapMaxMs,
    gapMedianMs: d.gapMedianMs,
    inputTokens: d.inputTokens ?? null,
    outputTokens: d.outputTokens,
    riskSegments: d.riskSegments,
    maxWindowEntropyBits: d.maxWindowEntropyBits,
  };
}

function semanticFindings(detectors: readonly DetectorSignal[]): SemanticFinding[] {
  const byName = new Map<string, DetectorSignal[]>();
  for (const s of detectors) pushTo(byName, s.detector, s);
  return [...byName.entries()]
    .map(([detector, signals]) => {
      const sorted = [...signals].sort((a, b) => a.emittedAt - b.emittedAt);
      const bySeverity: Record<string, number> = {};
      for (const s of sorted) bySeverity[s.severity] = (bySeverity[s.severity] ?? 0) + 1;
      // The worst first, then the latest (a run-end verdict says the most).
      const rank = { critical: 0, warning: 1, info: 2 } as Record<string, number>;
      const examples = [...sorted]
        .sort((a, b) => rank[a.severity] - rank[b.severity] || b.emittedAt - a.emittedAt)
        .slice(0, RUN_SERIES_LIMITS.examplesPerDetector)
        .map((s) => ({
          at: s.emittedAt,
          severity: s.severity,
          message: s.message,
          figures: s.figures,
          ...(s.labels ? { labels: s.labels } : {}),
        }));
      return {
        detector,
        count: sorted.length,
        bySeverity,
        firstAt: sorted[0].emittedAt,
        lastAt: sorted[sorted.length - 1].emittedAt,
        examples,
      };
    })
    .sort((a, b) => a.detector.localeCompare(b.detector));
}
