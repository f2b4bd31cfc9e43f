export interface AdaptiveSampleRateOptions {
  /** Starting share of responses embedded, 0..1. */
  readonly initial?: number;
  readonly min?: number;
  readonly max?: number;
  /**
   * CPU busy share (0..100) above which the rate backs off. The monitor must keep up with the
   * load first (entropy on every token); embeddings get only what is left. 70 %: our choice,
   * leaving headroom under the spec's 75 % edge-sampling line.
   */
  readonly targetCpuPct?: number;
}

/**
 * The share of responses to embed, steered by the CPU left: multiplicative decrease (halve)
 * when the host is busier than the target, additive increase (+5 % of the range) when it has
 * room. AIMD converges to the share the spare CPU can carry and backs off at once under load.
 */
export class AdaptiveSampleRate {
  private current: number;
  private readonly min: number;
  private readonly max: number;
  private readonly targetCpuPct: number;
  private accumulator = 0;

  constructor(options: AdaptiveSampleRateOptions = {}) {
    this.min = options.min ?? 0.01;
    this.max = options.max ?? 1;
    this.current = Math.min(this.max, Math.max(this.min, options.initial ?? 0.1));
    this.targetCpuPct = options.targetCpuPct ?? 70;
  }

  get rate(): number {
    return this.current;
  }

  /** Feeds one CPU reading (busy %, 0..100); returns the new rate. */
  adjust(cpuBusyPct: number): number {
    if (!Number.isFinite(cpuBusyPct)) return this.current;
    if (cpuBusyPct > this.targetCpuPct) this.current = Math.max(this.min, this.current / 2);
    else this.current = Math.min(this.max, this.current + 0.05 * (this.max - this.min));
    return this.current;
  }

  /**
   * Deterministic thinning: true for about `rate` of the calls, evenly spaced (no RNG, so a
   * test and a replay pick the same responses).
   */
  take(): boolean {
    this.accumulator += this.current;
    if (this.accumulator >= 1) {
      this.accumulator -= 1;
      return true;
    }
    return false;
  }
}
