import type { Histogram } from 'hdr-histogram-js';
import type { ErrorClass } from '@fathom/contracts';
import { encodeHistogram, newLatencyHistogram, recordMs } from './latency-histogram.util';
import type { WindowSnapshot } from './window.snapshot';

/** What the recorder needs of one finished request. */
export interface RequestSample {
  e2eMs: number;
  correctedE2eMs: number;
  ttftMs: number | null;
  chunkOffsetsMs: readonly number[];
  errorClass: ErrorClass | null;
  inputTokens: number;
  outputTokens: number;
}

/**
 * Accumulates one window of one shard: counts plus four HDR histograms (us). Latency histograms
 * take successful requests only (GuideLLM/vLLM count failures apart); every request counts in
 * `requests`. Memory is the four histograms, reused after each `flush`, whatever the run length.
 * Single owner (the engine's event loop).
 */
export class WindowRecorder {
  private readonly e2e = newLatencyHistogram();
  private readonly correctedE2e = newLatencyHistogram();
  private readonly ttft = newLatencyHistogram();
  private readonly itl = newLatencyHistogram();
  private requests = 0;
  private errors = 0;
  private errorClasses: Record<string, number> = {};
  private dropped = 0;
  private late = 0;
  private inputTokens = 0;
  private outputTokens = 0;
  private seq = 0;

  constructor(
    private readonly shard: number,
    private readonly windowMs: number,
  ) {}

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
    const offsets = sample.chunkOffsetsMs;
    for (let i = 1; i < offsets.length; i++) recordMs(this.itl, offsets[i] - offsets[i - 1]);
  }

  countDropped(n = 1): void {
    this.dropped += n;
  }

  countLate(): void {
    this.late++;
  }

  /** Ends the current window (epoch start `windowStart`) and starts the next one. */
  flush(windowStart: number): WindowSnapshot {
    const snapshot: WindowSnapshot = {
      shard: this.shard,
      seq: this.seq++,
      windowStart,
      windowMs: this.windowMs,
      requests: this.requests,
      errors: this.errors,
      errorClasses: this.errorClasses,
      dropped: this.dropped,
      late: this.late,
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
      histogramsUs: {
        e2e: take(this.e2e),
        correctedE2e: take(this.correctedE2e),
        ttft: take(this.ttft),
        itl: take(this.itl),
      },
    };
    this.requests = this.errors = this.dropped = this.late = this.inputTokens = this.outputTokens = 0;
    this.errorClasses = {};
    return snapshot;
  }
}

function take(histogram: Histogram): string {
  const encoded = encodeHistogram(histogram);
  histogram.reset();
  return encoded;
}
