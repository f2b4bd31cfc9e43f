import type { SloThresholds } from '@fathom/contracts';
import type { Histogram } from 'hdr-histogram-js';
import { newLatencyHistogram } from '../measure/latency-histogram.util';
import type { RetiredWindow } from '../measure/window.recorder';
import { sloVerdict } from './slo-verdict';

/**
 * k6's `abortOnFail`: the campaign thresholds judged on what one shard measured so far (its
 * measured windows only, warm-up and cool-down excluded), from `delayMs` after the start. Fed
 * the retired windows synchronously (it reads their histograms before they are encoded and
 * recycled). A shard that measured nothing yet is never failed.
 */
export class SloAbortWatch {
  private readonly e2e: Histogram = newLatencyHistogram();
  private readonly ttft: Histogram = newLatencyHistogram();
  private readonly tpot: Histogram = newLatencyHistogram();
  private requests = 0;
  private errors = 0;

  constructor(
    private readonly slo: SloThresholds,
    private readonly delayMs: number,
  ) {}

  add(window: RetiredWindow): void {
    this.requests += window.counts.requests;
    this.errors += window.counts.errors;
    const [e2e, , ttft, , tpot] = window.histograms;
    this.e2e.add(e2e);
    this.ttft.add(ttft);
    this.tpot.add(tpot);
  }

  /** The failed thresholds (empty while they hold, before `delayMs`, or without requests). */
  failures(elapsedMs: number): string[] {
    if (elapsedMs < this.delayMs || this.requests === 0) return [];
    const at = (h: Histogram, p: number) => (h.totalCount ? h.getValueAtPercentile(p) / 1000 : null);
    return sloVerdict(
      {
        requests: this.requests,
        errorRate: this.errors / this.requests,
        p95Ms: at(this.e2e, 95),
        p99Ms: at(this.e2e, 99),
        ttftP99Ms: at(this.ttft, 99),
        tpotP99Ms: at(this.tpot, 99),
      },
      this.slo,
    ).failures;
  }
}
