import type { Histogram } from 'hdr-histogram-js';
import type { GeneratorHealth, LoadPhase } from '@fathom/contracts';
import {
  decodeHistogram,
  encodeHistogram,
  newLatencyHistogram,
  quantilesFromHistogram,
  type Quantiles,
} from './latency-histogram.util';

/** One window of one shard. Histograms: hdr-histogram-js compressed base64, microseconds. */
export interface WindowSnapshot {
  shard: number;
  seq: number;
  /** Epoch ms of the window's start. */
  windowStart: number;
  /** Measured length: ticks come late, a stalled one closes a longer window, the last is cut. */
  windowMs: number;
  /** The length the generator ticks at (its grid); reports bucket by it, not by measured ones. */
  gridMs?: number;
  requests: number;
  errors: number;
  errorClasses: Record<string, number>;
  dropped: number;
  late: number;
  inputTokens: number;
  outputTokens: number;
  /** The sweep step and segment of the requests counted (set by the engine; see `LoadPhase`). */
  phase?: LoadPhase;
  histogramsUs: { e2e: string; correctedE2e: string; ttft: string; itl: string; tpot: string };
  /** The generator's own health over the window (see `GeneratorHealthMonitor`). */
  health?: GeneratorHealth;
}

export type HistogramName = keyof WindowSnapshot['histogramsUs'];
export const HISTOGRAM_NAMES: readonly HistogramName[] = ['e2e', 'correctedE2e', 'ttft', 'itl', 'tpot'];
const NAMES = HISTOGRAM_NAMES;
const EMPTY_HISTOGRAM = encodeHistogram(newLatencyHistogram());

/** Windows of any shards and generators added up. Counts and histograms add exactly. */
export interface MergedWindows {
  windows: number;
  requests: number;
  errors: number;
  errorClasses: Record<string, number>;
  dropped: number;
  late: number;
  inputTokens: number;
  outputTokens: number;
  histograms: Record<HistogramName, Histogram>;
  /** Encoded like a window's, so a merge can itself be merged again. */
  histogramsUs: WindowSnapshot['histogramsUs'];
  quantiles: Record<HistogramName, Quantiles>;
}

/** A window to merge; `tpot` may be absent (windows from generators older than the TPOT histogram). */
export type Mergeable = Pick<
  WindowSnapshot,
  'requests' | 'errors' | 'errorClasses' | 'dropped' | 'late' | 'inputTokens' | 'outputTokens'
> & { histogramsUs: Omit<WindowSnapshot['histogramsUs'], 'tpot'> & { tpot?: string } };

export function mergeWindows(windows: Iterable<Mergeable>): MergedWindows {
  const merged = {
    windows: 0,
    requests: 0,
    errors: 0,
    errorClasses: {} as Record<string, number>,
    dropped: 0,
    late: 0,
    inputTokens: 0,
    outputTokens: 0,
  };
  const histograms = {} as Record<HistogramName, Histogram>;
  for (const window of windows) {
    merged.windows++;
    merged.requests += window.requests;
    merged.errors += window.errors;
    merged.dropped += window.dropped;
    merged.late += window.late;
    merged.inputTokens += window.inputTokens;
    merged.outputTokens += window.outputTokens;
    for (const [errorClass, n] of Object.entries(window.errorClasses))
      merged.errorClasses[errorClass] = (merged.errorClasses[errorClass] ?? 0) + n;
    for (const name of NAMES) {
      const encoded = window.histogramsUs[name];
      if (encoded === undefined) continue;
      const decoded = decodeHistogram(encoded);
      if (histograms[name]) histograms[name].add(decoded);
      else histograms[name] = decoded;
    }
  }
  for (const name of NAMES) {
    // An empty merge still has (empty) histograms, so callers need no special case.
    histograms[name] ??= decodeHistogram(EMPTY_HISTOGRAM);
  }
  const histogramsUs = Object.fromEntries(
    NAMES.map((n) => [n, encodeHistogram(histograms[n])]),
  ) as MergedWindows['histogramsUs'];
  const quantiles = Object.fromEntries(
    NAMES.map((n) => [n, quantilesFromHistogram(histograms[n])]),
  ) as MergedWindows['quantiles'];
  return { ...merged, histograms, histogramsUs, quantiles };
}
