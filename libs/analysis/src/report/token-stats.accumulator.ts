import type {
  TelemetryWindow,
  TokenStatsBatchSignal,
  TokenStatsEntry,
  TokenStatsSignal,
} from '@fathom/contracts';
import type { RecordDigest } from '../evidence/record-digest';
import type { RequestEndIndex } from './report-digests.accumulator';
import { seriesBuckets, type SeriesTokenSample } from './run-series';

/** Goodput's counts: responses judged, good (no error, latency SLO met), and also every check passed. */
export interface GoodputCounts {
  judged: number;
  good: number;
  semanticallyGood: number;
}

/**
 * What the run's summary and report need of its token stats, whatever their number: sums and
 * counts, goodput counts (measured responses, per sweep step, per series bucket) and the token
 * samples (bounded by the semantic-monitor, `TOKEN_SAMPLE_LIMITS`).
 */
export interface TokenStatsFigures {
  readonly responses: number;
  readonly outputTokens: number;
  readonly chunks: number;
  /** Responses whose server-reported and client-counted output tokens disagree. */
  readonly tokenCountMismatches: number;
  /** Responses with a server count (`tokenCountMismatch` not null). */
  readonly serverCounted: number;
  /** Mean gap between chunks (ms), weighted by each response's gap count; null: no response had one. */
  readonly gapMeanMs: number | null;
  /** Responses of the measured segment (a response without a phase counts as measured). */
  readonly measured: GoodputCounts;
  /** Measured responses with a phase, by sweep step (`phase.index`). */
  readonly measuredByStep: ReadonlyMap<number, GoodputCounts>;
  /**
   * Responses by the series bucket their request ended in (the stats' own `endedAt`, else its
   * digest's end; a response with neither is in no bucket), on the bucket geometry
   * `seriesBuckets` gave for the run's windows.
   */
  readonly series: {
    readonly start: number;
    readonly bucketMs: number;
    readonly judgedByBucket: ReadonlyMap<number, GoodputCounts>;
  };
  /**
   * Responses placed at their batch's emission (`emittedAt`, a telemetry flush after their end),
   * not their end: stored without `endedAt`, in a run with more requests than the request-end
   * index holds (`RequestEndIndex.complete` false). 0: every placement is exact.
   */
  readonly placedByEmission: number;
  /** The sampled responses' token rows: most risk spans first, then the earliest. */
  readonly tokenSamples: readonly SeriesTokenSample[];
}

/**
 * The evidence the accumulator places responses with: the run's windows, and when each request
 * ended, for stats stored without their own end: its record digests, whole, or where they were
 * folded, the bounded request-end index.
 */
export type TokenStatsPlacement =
  | { readonly windows: readonly TelemetryWindow[]; readonly digests: readonly RecordDigest[] }
  | {
      readonly windows: readonly TelemetryWindow[];
      /** `ReportDigestFigures.requestEnds`. */
      readonly requestEnds: RequestEndIndex;
    };

/**
 * Folds a run's token stats, fed in stored order a page at a time, into `TokenStatsFigures`:
 * memory is the figures (a few counters per step and per bucket, the token samples) and the
 * digests' bounded request-end index, never one object per response.
 *
 * Sums are added in feeding order, so the figures equal those of one pass over the whole run's
 * stats in the same order, to the last bit.
 */
export class TokenStatsAccumulator {
  private responses = 0;
  private outputTokens = 0;
  private chunks = 0;
  private tokenCountMismatches = 0;
  private serverCounted = 0;
  private withGapMean = 0;
  private gapMsWeighted = 0;
  private gapCount = 0;
  private readonly measured: GoodputCounts = noneJudged();
  private readonly measuredByStep = new Map<number, GoodputCounts>();
  private readonly judgedByBucket = new Map<number, GoodputCounts>();
  private readonly samples: SeriesTokenSample[] = [];
  /** Request id -> when it ended (its digest; the last digest of an id wins). */
  private readonly endedAt: RequestEndIndex;
  private placedByEmission = 0;
  private readonly start: number;
  private readonly bucketMs: number;

  constructor(placement: TokenStatsPlacement) {
    ({ start: this.start, bucketMs: this.bucketMs } = seriesBuckets(placement.windows));
    if ('requestEnds' in placement) this.endedAt = placement.requestEnds;
    else {
      const ends = new Map<string, number>();
      for (const d of placement.digests) if (d.requestId) ends.set(d.requestId, d.at);
      this.endedAt = { ends, complete: true };
    }
  }

  /** One stored token-stats signal: a batch, or one record's signal as stored before batching. */
  add(signal: TokenStatsBatchSignal | TokenStatsSignal): void {
    if (signal.kind === 'token-stats') this.addEntry(signal, signal.emittedAt);
    else if (signal.kind === 'token-stats-batch')
      for (const entry of signal.stats) this.addEntry(entry, signal.emittedAt);
    else throw new TypeError(`not a token-stats signal: kind ${String((signal as { kind?: unknown }).kind)}`);
  }

  figures(): TokenStatsFigures {
    return {
      responses: this.responses,
      outputTokens: this.outputTokens,
      chunks: this.chunks,
      tokenCountMismatches: this.tokenCountMismatches,
      serverCounted: this.serverCounted,
      gapMeanMs: this.withGapMean ? this.gapMsWeighted / Math.max(1, this.gapCount) : null,
      measured: { ...this.measured },
      measuredByStep: copyCounts(this.measuredByStep),
      series: { start: this.start, bucketMs: this.bucketMs, judgedByBucket: copyCounts(this.judgedByBucket) },
      placedByEmission: this.placedByEmission,
      tokenSamples: [...this.samples].sort((a, b) => b.spans.length - a.spans.length || a.at - b.at),
    };
  }

  private addEntry(s: TokenStatsEntry, emittedAt: number): void {
    this.responses++;
    this.outputTokens += s.outputTokens;
    this.chunks += s.chunks;
    if ((s.tokenCountMismatch ?? 0) !== 0) this.tokenCountMismatches++;
    if (s.tokenCountMismatch !== null) this.serverCounted++;
    if (s.gapMeanMs !== null) {
      this.withGapMean++;
      this.gapMsWeighted += (s.gapMeanMs ?? 0) * s.gapCount;
      this.gapCount += s.gapCount;
    }
    if ((s.phase?.segment ?? 'measured') === 'measured') {
      judge(this.measured, s);
      if (s.phase) judge(countsOf(this.measuredByStep, s.phase.index), s);
    }
    const at = this.placed(s, emittedAt);
    if (at !== undefined)
      judge(countsOf(this.judgedByBucket, Math.max(0, Math.ceil((at - this.start) / this.bucketMs) - 1)), s);
    if (s.tokenSample !== undefined)
      this.samples.push({
        requestId: s.requestId,
        at: at ?? emittedAt,
        meanEntropyBits: s.meanEntropyBits ?? null,
        ...s.tokenSample,
      });
  }

  /** When `s`'s request ended, as well as it is known; undefined: it had no digest. */
  private placed(s: TokenStatsEntry, emittedAt: number): number | undefined {
    if (s.endedAt !== undefined) return s.endedAt;
    const digestEnd = this.endedAt.ends.get(s.requestId);
    if (digestEnd !== undefined || this.endedAt.complete) return digestEnd;
    this.placedByEmission++;
    return emittedAt;
  }
}

/** Good: succeeded within the per-request latency SLO; semantically good: also every check passed. */
function judge(counts: GoodputCounts, s: TokenStatsEntry): void {
  counts.judged++;
  if (s.assessment === 'error' || s.latencySloMet === false) return;
  counts.good++;
  if (Object.values(s.checks ?? {}).every(Boolean)) counts.semanticallyGood++;
}

function noneJudged(): GoodputCounts {
  return { judged: 0, good: 0, semanticallyGood: 0 };
}

function countsOf(byKey: Map<number, GoodputCounts>, key: number): GoodputCounts {
  let counts = byKey.get(key);
  if (!counts) byKey.set(key, (counts = noneJudged()));
  return counts;
}

function copyCounts(byKey: ReadonlyMap<number, GoodputCounts>): Map<number, GoodputCounts> {
  return new Map([...byKey].map(([key, counts]) => [key, { ...counts }]));
}
