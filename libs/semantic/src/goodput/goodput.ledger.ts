import type { GoodputReport, RequestVerdict } from './semantic-goodput.util';

/**
 * `computeGoodput` as a running tally, for a consumer that sees a run's requests one batch at a
 * time and must not keep them all. Same rules: a request with no semantic check counts as
 * semantically good when its latency SLOs pass. Redelivered requests count once (by id, the
 * only per-request state kept).
 */
export class GoodputLedger {
  private readonly seen = new Set<string>();
  private good = 0;
  private semantic = 0;
  private readonly checkFailures: Record<string, number> = {};

  /** False when the request was already counted (an at-least-once redelivery). */
  add(verdict: RequestVerdict): boolean {
    if (this.seen.has(verdict.requestId)) return false;
    this.seen.add(verdict.requestId);
    if (!verdict.latencySloMet) return true;
    this.good++;
    let passed = true;
    for (const [name, ok] of Object.entries(verdict.semanticChecks)) {
      if (ok) continue;
      passed = false;
      this.checkFailures[name] = (this.checkFailures[name] ?? 0) + 1;
    }
    if (passed) this.semantic++;
    return true;
  }

  get requests(): number {
    return this.seen.size;
  }

  report(durationS?: number): GoodputReport {
    const n = this.seen.size;
    const rate = durationS !== undefined && durationS > 0;
    return {
      requests: n,
      goodRequests: this.good,
      semanticallyGoodRequests: this.semantic,
      goodput: n === 0 ? null : this.good / n,
      semanticGoodput: n === 0 ? null : this.semantic / n,
      goodputPerSecond: rate ? this.good / durationS : null,
      semanticGoodputPerSecond: rate ? this.semantic / durationS : null,
      checkFailures: { ...this.checkFailures },
    };
  }
}
