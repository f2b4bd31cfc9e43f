import type { GoodputReport, RequestVerdict } from './semantic-goodput.util';

/** Telemetry batches whose ids a ledger remembers to skip a redelivery (oldest forgotten first). */
export const LEDGER_REMEMBERED_BATCHES = 4096;

/**
 * `computeGoodput` as a running tally, for a consumer that sees a run's requests one batch at a
 * time and must not keep them all. Same rules: a request with no semantic check counts as
 * semantically good when its latency SLOs pass. A redelivered batch counts once: the ledger
 * remembers the last `LEDGER_REMEMBERED_BATCHES` batch ids (a redelivery comes soon after the
 * first delivery, from the offsets not yet committed), not every request id, which grew with
 * every record of a run (about 1 MB a minute of heap at the default record budget).
 */
export class GoodputLedger {
  private readonly batches = new Set<string>();
  private readonly batchOrder: string[] = [];
  private counted = 0;
  private good = 0;
  private semantic = 0;
  private readonly checkFailures: Record<string, number> = {};

  /** False when the batch was counted already (an at-least-once redelivery): add none of its requests. */
  admitBatch(batchId: string): boolean {
    if (this.batches.has(batchId)) return false;
    this.batches.add(batchId);
    this.batchOrder.push(batchId);
    if (this.batchOrder.length > LEDGER_REMEMBERED_BATCHES) this.batches.delete(this.batchOrder.shift()!);
    return true;
  }

  /** Counts one request of an admitted batch. */
  add(verdict: RequestVerdict): void {
    this.counted++;
    if (!verdict.latencySloMet) return;
    this.good++;
    let passed = true;
    for (const [name, ok] of Object.entries(verdict.semanticChecks)) {
      if (ok) continue;
      passed = false;
      this.checkFailures[name] = (this.checkFailures[name] ?? 0) + 1;
    }
    if (passed) this.semantic++;
  }

  get requests(): number {
    return this.counted;
  }

  report(durationS?: number): GoodputReport {
    const n = this.counted;
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
