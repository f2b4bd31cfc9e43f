/**
 * Which finished requests become per-request records (semantic checks, embeddings, stored
 * events). The latency histograms count every request whatever this says.
 *
 * - `budget(perSecond)`: a token bucket refilled at the current rate (at most one second of burst),
 *   so a shard publishes about `rate` records a second however fast the target answers. Adaptive
 *   (AIMD): `adjust(true)` (the window was client-bound) halves the rate, down to 1 % of the
 *   target; `adjust(false)` adds back a tenth of the target, up to it. With `total`, it takes
 *   no more than that many in all.
 * - `fixed(fraction)`: the campaign's explicit `recordSampleRate`, a seeded coin per request.
 * Single owner (the engine's event loop).
 */
export class RecordBudget {
  private tokens: number;
  private lastMono: number;
  private current: number;
  /** Records the budget may still take (Infinity: no ceiling). */
  private left: number;

  private constructor(
    private readonly target: number | null,
    private readonly fraction: number,
    private readonly coin: () => number,
    nowMono: number,
    total: number,
  ) {
    this.left = total;
    this.current = target ?? 0;
    this.tokens = Math.max(1, this.current);
    this.lastMono = nowMono;
  }

  static budget(perSecond: number, nowMono = performance.now(), total = Infinity): RecordBudget {
    return new RecordBudget(perSecond, 1, () => 0, nowMono, total);
  }

  static fixed(fraction: number, coin: () => number): RecordBudget {
    return new RecordBudget(null, fraction, coin, 0, Infinity);
  }

  /**
   * The budget of one shard of `shards` planned for `durationMs`: `perSecond`, or less where the
   * run's `maxRecords` would not last the run at that rate (spread evenly over it), and never
   * more than the shard's share of `maxRecords` in all.
   */
  static forShard(
    load: { recordsPerSecond: number; maxRecords: number; durationMs: number },
    shards: number,
    nowMono = performance.now(),
  ): RecordBudget {
    const share = load.maxRecords / shards;
    const rate = Math.min(load.recordsPerSecond, share / Math.max(0.001, load.durationMs / 1000));
    return RecordBudget.budget(rate, nowMono, Math.max(1, Math.floor(share)));
  }

  /** Records per second now (the budget's current rate; NaN-free: 0 for a fixed fraction). */
  get rate(): number {
    return this.current;
  }

  /** Whether the request that just finished becomes a record. */
  take(nowMono: number): boolean {
    if (this.target === null) return this.fraction > 0 && (this.fraction >= 1 || this.coin() < this.fraction);
    const refill = ((nowMono - this.lastMono) / 1000) * this.current;
    this.lastMono = nowMono;
    this.tokens = Math.min(Math.max(1, this.current), this.tokens + refill);
    if (this.tokens < 1 || this.left < 1) return false;
    this.tokens -= 1;
    this.left -= 1;
    return true;
  }

  /** Once a window: halve while the client is the bottleneck, recover a tenth a window after. */
  adjust(clientBound: boolean): void {
    if (this.target === null) return;
    const floor = this.target / 100;
    this.current = clientBound
      ? Math.max(floor, this.current / 2)
      : Math.min(this.target, this.current + this.target / 10);
  }
}
