import {
  Detectors,
  maxOf,
  pushTo,
  type DetectorSignal,
  type GpuSample,
  type GpuTelemetry,
  type TelemetryWindow,
} from '@fathom/contracts';
import {
  addSparse,
  decodeSparseHistogram,
  mergeWindows,
  newLatencyHistogram,
  tailQuantilesMs,
  type SparseHistogram,
} from '@fathom/load';

type HistogramName = 'e2e' | 'correctedE2e' | 'ttft' | 'itl' | 'tpot';
const HISTOGRAM_NAMES: HistogramName[] = ['e2e', 'correctedE2e', 'ttft', 'itl', 'tpot'];
const EMPTY_HISTOGRAM_US = mergeWindows([]).histogramsUs.e2e;
import type { RecordDigest } from './record-digest';

export interface GpuPoint {
  readonly at: number;
  readonly source: string;
  readonly samples: readonly GpuSample[];
}

export interface LatencyFigures {
  readonly p50: number | null;
  readonly p95: number | null;
  readonly p99: number | null;
  readonly max: number | null;
}

/** What happened over one span of a run, merged across generators. */
export interface SpanView {
  readonly fromMs: number;
  readonly toMs: number;
  readonly requests: number;
  readonly errors: number;
  readonly errorClasses: Record<string, number>;
  readonly late: number;
  readonly dropped: number;
  readonly latency: {
    readonly e2e: LatencyFigures;
    readonly correctedE2e: LatencyFigures;
    readonly ttft: LatencyFigures;
    readonly itl: LatencyFigures;
    readonly tpot: LatencyFigures;
  };
  readonly digests: readonly RecordDigest[];
  readonly gpu: readonly GpuPoint[];
  readonly detectors: readonly DetectorSignal[];
}

/**
 * Detectors that judge one response each (up to one signal per record: a run of hours at the
 * default budget holds hundreds of thousands, ~0.8 KB each). Only spans read them (prompt
 * explosion's cause, over its recent span), so a live run keeps them like windows.
 */
const PER_RESPONSE_DETECTORS: ReadonlySet<string> = new Set([
  Detectors.semanticAnomaly,
  Detectors.hallucinationRisk,
  Detectors.promptExplosion,
]);

/**
 * Everything the analyzer knows of one run, in time order: telemetry windows (the exact latency
 * stream), record digests, GPU scrapes and detector signals. Spans are half-open (from, to]
 * on the time each piece of evidence describes: a window's end, a request's end, a scrape.
 */
export class RunTimeline {
  private readonly windowsByKey = new Map<string, TelemetryWindow>();
  /**
   * Decoded once per window (live evaluation merges spans several times a second), to the
   * non-empty buckets: a few KB per window where a decoded histogram is 92 KB. A live run keeps
   * thousands of windows, and 92 KB blocks that live minutes among short-lived ones fragmented
   * the allocator (RSS crept after the heap was flat; bench/memory.bench.ts).
   */
  private readonly decoded = new Map<TelemetryWindow, Partial<Record<HistogramName, SparseHistogram>>>();
  /** The one dense histogram spans are merged into (reset after each): no 92 KB block per merge. */
  private readonly merged = newLatencyHistogram();
  private readonly digestList: RecordDigest[] = [];
  private readonly gpuList: GpuPoint[] = [];
  private readonly detectorList: DetectorSignal[] = [];
  private digestsSorted = true;
  private gpuSorted = true;
  private detectorsSorted = true;
  /** The same signals by detector (causes ask for one detector's), and the names not in order. */
  private readonly detectorsByName = new Map<string, DetectorSignal[]>();
  private readonly unsortedNames = new Set<string>();
  /** Start of the first window ever added: pruning never moves it (baselines are anchored on it). */
  private firstWindowStart: number | null = null;
  /** Bounds of digests folded but not held (`addDigestBounds`). */
  private foldedStartedAtMin: number | null = null;
  private foldedEndedAtMax: number | null = null;

  addWindow(window: TelemetryWindow): void {
    const key = `${window.generatorId}/${window.shard}/${window.seq}`;
    const previous = this.windowsByKey.get(key);
    if (previous) this.decoded.delete(previous);
    this.windowsByKey.set(key, window);
    if (this.firstWindowStart === null || window.windowStart < this.firstWindowStart)
      this.firstWindowStart = window.windowStart;
  }

  /**
   * Forgets windows, digests, GPU scrapes and per-response detector signals whose time is in
   * (`headUntilMs`, `beforeMs`]: a live run keeps its head (the baseline its root causes compare
   * against) and its recent past (the longest span anything judges), so its memory stays flat
   * however long it lasts. The whole run is read back from storage for its report. The other
   * detector signals are kept: run-wide findings (schema drift, RAG mismatch, the goodput summary)
   * that causes read from the run's start.
   */
  prune(headUntilMs: number, beforeMs: number): void {
    if (beforeMs <= headUntilMs) return;
    const dropped = (t: number) => t > headUntilMs && t <= beforeMs;
    for (const [key, w] of this.windowsByKey) {
      if (!dropped(w.windowStart + w.windowMs)) continue;
      this.windowsByKey.delete(key);
      this.decoded.delete(w);
    }
    this.sort();
    removeWhere(this.digestList, (d) => dropped(d.at));
    removeWhere(this.gpuList, (g) => dropped(g.at));
    removeWhere(this.detectorList, (s) => PER_RESPONSE_DETECTORS.has(s.detector) && dropped(s.emittedAt));
    for (const name of PER_RESPONSE_DETECTORS) {
      const named = this.detectorsByName.get(name);
      if (named) removeWhere(named, (s) => dropped(s.emittedAt));
    }
  }

  private histogramOf(window: TelemetryWindow, name: HistogramName): SparseHistogram {
    let cache = this.decoded.get(window);
    if (!cache) this.decoded.set(window, (cache = {}));
    // Windows from generators older than the TPOT histogram have none: an empty one.
    return (cache[name] ??= decodeSparseHistogram(window.histogramsUs[name] ?? EMPTY_HISTOGRAM_US));
  }

  /** Quantiles of one latency histogram over the windows, merged exactly (ms). */
  private quantiles(windows: readonly TelemetryWindow[], name: HistogramName): LatencyFigures {
    try {
      addSparse(
        this.merged,
        windows.map((w) => this.histogramOf(w, name)),
      );
      // Not quantilesFromHistogram: its mean walks every bucket, and nothing here reads it.
      return tailQuantilesMs(this.merged);
    } finally {
      this.merged.reset();
    }
  }

  /** Bytes the decoded windows' histograms hold (their typed arrays). */
  get decodedHistogramBytes(): number {
    let bytes = 0;
    for (const cache of this.decoded.values())
      for (const h of Object.values(cache)) bytes += h.indexes.byteLength + h.counts.byteLength;
    return bytes;
  }

  addDigests(digests: readonly RecordDigest[]): void {
    for (const d of digests) {
      const last = this.digestList[this.digestList.length - 1];
      if (last && d.at < last.at) this.digestsSorted = false;
      this.digestList.push(d);
    }
  }

  /**
   * Bounds of digests the timeline does not hold (a report folds a long run's digests and holds a
   * sample): `startMs` and `latestMs` count them as if they were held.
   */
  addDigestBounds(startedAtMin: number, endedAtMax: number): void {
    this.foldedStartedAtMin = Math.min(this.foldedStartedAtMin ?? startedAtMin, startedAtMin);
    this.foldedEndedAtMax = Math.max(this.foldedEndedAtMax ?? endedAtMax, endedAtMax);
  }

  addGpu(scrape: GpuTelemetry): void {
    if (scrape.health !== 'ok') return;
    const last = this.gpuList[this.gpuList.length - 1];
    if (last && scrape.scrapedAt < last.at) this.gpuSorted = false;
    this.gpuList.push({ at: scrape.scrapedAt, source: scrape.source, samples: scrape.samples });
  }

  addDetector(signal: DetectorSignal): void {
    const last = this.detectorList[this.detectorList.length - 1];
    if (last && signal.emittedAt < last.emittedAt) this.detectorsSorted = false;
    this.detectorList.push(signal);
    const named = this.detectorsByName.get(signal.detector);
    if (named && signal.emittedAt < named[named.length - 1].emittedAt)
      this.unsortedNames.add(signal.detector);
    pushTo(this.detectorsByName, signal.detector, signal);
  }

  /** The signals of detector `name`, oldest first (a run keeps them all: causes ask for theirs). */
  detectorsOf(name: string): readonly DetectorSignal[] {
    const named = this.detectorsByName.get(name);
    if (!named) return [];
    if (this.unsortedNames.delete(name)) named.sort((a, b) => a.emittedAt - b.emittedAt);
    return named;
  }

  /** When the newest detector signal was emitted (epoch ms); null before any. */
  get latestDetectorMs(): number | null {
    const detectors = this.detectors;
    return detectors.length ? detectors[detectors.length - 1].emittedAt : null;
  }

  get windows(): TelemetryWindow[] {
    return [...this.windowsByKey.values()];
  }

  get digests(): readonly RecordDigest[] {
    this.sort();
    return this.digestList;
  }

  get gpu(): readonly GpuPoint[] {
    this.sort();
    return this.gpuList;
  }

  /** Oldest first (those emitted at the same time in the order they came). */
  get detectors(): readonly DetectorSignal[] {
    this.sort();
    return this.detectorList;
  }

  /** Start of the first window (epoch ms), or the first digest; null before any evidence. */
  get startMs(): number | null {
    if (this.firstWindowStart !== null) return this.firstWindowStart;
    let start = this.foldedStartedAtMin;
    for (const d of this.digestList) start = start === null ? d.startedAt : Math.min(start, d.startedAt);
    return start;
  }

  /** Time of the newest evidence (epoch ms). */
  get latestMs(): number | null {
    let latest: number | null = null;
    const bump = (t: number) => (latest = latest === null ? t : Math.max(latest, t));
    for (const w of this.windowsByKey.values()) bump(w.windowStart + w.windowMs);
    const d = this.digests;
    if (d.length) bump(d[d.length - 1].at);
    if (this.foldedEndedAtMax !== null) bump(this.foldedEndedAtMax);
    return latest;
  }

  /** What happened over (fromMs, toMs]; windows of warm-up and cool-down requests are left out. */
  span(fromMs: number, toMs: number): SpanView {
    const windows = [...this.windowsByKey.values()].filter((w) => {
      const end = w.windowStart + w.windowMs;
      return end > fromMs && end <= toMs && (w.phase?.segment ?? 'measured') === 'measured';
    });
    const errorClasses: Record<string, number> = {};
    let requests = 0;
    let errors = 0;
    let late = 0;
    let dropped = 0;
    for (const w of windows) {
      requests += w.requests;
      errors += w.errors;
      late += w.late;
      dropped += w.dropped;
      for (const [k, n] of Object.entries(w.errorClasses)) errorClasses[k] = (errorClasses[k] ?? 0) + n;
    }
    // Latency is merged lazily, per histogram asked for.
    const cache: Partial<Record<HistogramName, LatencyFigures>> = {};
    const latency = {} as SpanView['latency'];
    for (const name of HISTOGRAM_NAMES) {
      Object.defineProperty(latency, name, {
        enumerable: true,
        get: () => (cache[name] ??= this.quantiles(windows, name)),
      });
    }
    return {
      fromMs,
      toMs,
      requests,
      errors,
      errorClasses,
      late,
      dropped,
      latency,
      digests: between(this.digests, (d) => d.at, fromMs, toMs),
      gpu: between(this.gpu, (g) => g.at, fromMs, toMs),
      // Detector signals are kept for the whole run (a live run of an hour: hundreds of
      // thousands), and spans are asked for several times a second: found, not filtered.
      detectors: between(this.detectors, (s) => s.emittedAt, fromMs, toMs),
    };
  }

  private sort(): void {
    if (!this.digestsSorted) {
      this.digestList.sort((a, b) => a.at - b.at);
      this.digestsSorted = true;
    }
    if (!this.gpuSorted) {
      this.gpuList.sort((a, b) => a.at - b.at);
      this.gpuSorted = true;
    }
    if (!this.detectorsSorted) {
      this.detectorList.sort((a, b) => a.emittedAt - b.emittedAt);
      this.detectorsSorted = true;
    }
  }
}

/** Removes in place the items `drop` picks, keeping the order of the rest. */
function removeWhere<T>(items: T[], drop: (item: T) => boolean): void {
  let kept = 0;
  for (const item of items) if (!drop(item)) items[kept++] = item;
  items.length = kept;
}

function between<T>(sorted: readonly T[], at: (item: T) => number, fromMs: number, toMs: number): T[] {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (at(sorted[mid]) <= fromMs) lo = mid + 1;
    else hi = mid;
  }
  const out: T[] = [];
  for (let i = lo; i < sorted.length && at(sorted[i]) <= toMs; i++) out.push(sorted[i]);
  return out;
}

/** Mean over the span of one canonical metric, averaged over GPUs/engines per scrape; null when absent. */
export function gpuMean(points: readonly GpuPoint[], metric: string): number | null {
  const values = gpuSeries(points, metric).map((p) => p.value);
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}

export function gpuMax(points: readonly GpuPoint[], metric: string): number | null {
  const values = gpuSeries(points, metric).map((p) => p.value);
  return values.length ? maxOf(values) : null;
}

/** Increase of a counter over the span (sum over engines of last - first, restarts count from 0). */
export function gpuCounterIncrease(points: readonly GpuPoint[], metric: string): number | null {
  const series = gpuSeries(points, metric);
  if (series.length < 2) return null;
  let increase = 0;
  for (let i = 1; i < series.length; i++) {
    const delta = series[i].value - series[i - 1].value;
    increase += delta >= 0 ? delta : series[i].value;
  }
  return increase;
}

/** Per scrape: the metric's mean over the GPUs/engines that reported it. */
export function gpuSeries(points: readonly GpuPoint[], metric: string): { at: number; value: number }[] {
  const out: { at: number; value: number }[] = [];
  for (const p of points) {
    let sum = 0;
    let n = 0;
    for (const s of p.samples) {
      if (s.metric !== metric) continue;
      sum += s.value;
      n++;
    }
    if (n) out.push({ at: p.at, value: sum / n });
  }
  return out;
}
