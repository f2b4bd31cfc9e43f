import type { Histogram } from 'hdr-histogram-js';
import type { ErrorClass } from '@fathom/contracts';
import { encodeHistogram, newLatencyHistogram, recordMs } from './latency-histogram.util';
import type { WindowSnapshot } from './window.snapshot';

/** The latency histograms of a window, in `histogramsUs` order: e2e, correctedE2e, ttft, itl, tpot. */
export type WindowHistograms = [
  e2e: Histogram,
  correctedE2e: Histogram,
  ttft: Histogram,
  itl: Histogram,
  tpot: Histogram,
];

/** A closed window: final counts, histograms not yet encoded (see `WindowEncoder`). */
export interface RetiredWindow {
  counts: Omit<WindowSnapshot, 'histogramsUs'>;
  histograms: WindowHistograms;
}

/** Spare histogram sets kept for reuse; more retired sets than this are dropped to the GC. */
const MAX_SPARE_SETS = 3;

/** What the recorder needs of one finished request. */
export interface RequestSample {
  e2eMs: number;
  correctedE2eMs: number;
  ttftMs: number | null;
  /** Time per output token (vLLM's TPOT); null under 2 output tokens. */
  tpotMs: number | null;
  chunkOffsetsMs: readonly number[];
  errorClass: ErrorClass | null;
  inputTokens: number;
  outputTokens: number;
}

/**
 * Accumulates one window of one shard: counts plus five HDR histograms (us). Latency histograms
 * take successful requests only (GuideLLM/vLLM count failures apart); every request counts in
 * `requests`. `rotate` closes a window in O(1) (the live histograms are swapped for spare ones)
 * so the encoding can run later, off the window boundary; `recycle` takes them back for reuse.
 * Memory is the live set plus at most `MAX_SPARE_SETS` spares, whatever the run length.
 * Single owner (the engine's event loop).
 */
export class WindowRecorder {
  private e2e = newLatencyHistogram();
  private correctedE2e = newLatencyHistogram();
  private ttft = newLatencyHistogram();
  private itl = newLatencyHistogram();
  private tpot = newLatencyHistogram();
  private readonly spares: WindowHistograms[] = [];
  private requests = 0;
  private errors = 0;
  private errorClasses: Record<string, number> = {};
  private dropped = 0;
  private late = 0;
  private inputTokens = 0;
  private outputTokens = 0;
  private seq = 0;

  /** `nextSeq`: shared by the recorders of one shard (one per load phase), so seqs never repeat. */
  constructor(
    private readonly shard: number,
    private readonly windowMs: number,
    private readonly nextSeq?: () => number,
  ) {}

  /** Nothing observed or counted since the last rotate. */
  get idle(): boolean {
    return this.requests === 0 && this.dropped === 0 && this.late === 0;
  }

  observe(sample: RequestSample): void {
    this.requests++;
    this.inputTokens += sample.inputTokens;
    this.outputTokens += sample.outputTokens;
    if (sample.errorClass !== null) {
      this.errors++;
      this.errorClasses[sample.errorClass] = (this.errorClasses[sample.errorClass] ?? 0) + 1;
      return;
    }
    recordMs(this.e2e, sample.e2eMs);
    recordMs(this.correctedE2e, sample.correctedE2eMs);
    if (sample.ttftMs !== null) recordMs(this.ttft, sample.ttftMs);
    if (sample.tpotMs !== null) recordMs(this.tpot, sample.tpotMs);
    const offsets = sample.chunkOffsetsMs;
    for (let i = 1; i < offsets.length; i++) recordMs(this.itl, offsets[i] - offsets[i - 1]);
  }

  countDropped(n = 1): void {
    this.dropped += n;
  }

  countLate(): void {
    this.late++;
  }

  /**
   * Ends the current window (epoch start `windowStart`, length `windowMs`) and starts the next
   * one, without encoding: the retired histograms are handed over as they are.
   */
  rotate(windowStart: number, windowMs = this.windowMs): RetiredWindow {
    const histograms: WindowHistograms = [this.e2e, this.correctedE2e, this.ttft, this.itl, this.tpot];
    const next = this.spares.pop();
    if (next) [this.e2e, this.correctedE2e, this.ttft, this.itl, this.tpot] = next;
    else {
      this.e2e = newLatencyHistogram();
      this.correctedE2e = newLatencyHistogram();
      this.ttft = newLatencyHistogram();
      this.itl = newLatencyHistogram();
      this.tpot = newLatencyHistogram();
    }
    const counts: RetiredWindow['counts'] = {
      shard: this.shard,
      seq: this.nextSeq ? this.nextSeq() : this.seq++,
      windowStart,
      windowMs,
      gridMs: this.windowMs,
      requests: this.requests,
      errors: this.errors,
      errorClasses: this.errorClasses,
      dropped: this.dropped,
      late: this.late,
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
    };
    this.requests = this.errors = this.dropped = this.late = this.inputTokens = this.outputTokens = 0;
    this.errorClasses = {};
    return { counts, histograms };
  }

  /** Takes back an encoded window's histograms: cleared here, reused by a later `rotate`. */
  recycle(histograms: WindowHistograms): void {
    if (this.spares.length >= MAX_SPARE_SETS) return;
    for (const h of histograms) h.reset();
    this.spares.push(histograms);
  }

  /** Ends the current window and encodes it at once (blocking; the engine uses `rotate`). */
  flush(windowStart: number, windowMs = this.windowMs): WindowSnapshot {
    const retired = this.rotate(windowStart, windowMs);
    const [e2e, correctedE2e, ttft, itl, tpot] = retired.histograms.map(encodeHistogram);
    this.recycle(retired.histograms);
    return { ...retired.counts, histogramsUs: { e2e, correctedE2e, ttft, itl, tpot } };
  }
}
