/** Healthy KV-cache hit-rate variance: below 0.08 (spec, monitoring matrix, "system" layer). */
export const KV_HIT_RATE_VARIANCE_HEALTHY_BELOW = 0.08;

/** Population variance; undefined for fewer than two values. */
export function variance(values: readonly number[]): number | undefined {
  if (values.length < 2) return undefined;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return values.reduce((acc, v) => acc + (v - mean) ** 2, 0) / values.length;
}

export interface SlidingWindowOptions {
  /** Keep points newer than this many ms before the latest one. */
  readonly windowMs?: number;
  /** And at most this many points. */
  readonly maxPoints?: number;
}

/**
 * Variance of a signal (e.g. the KV-cache hit rate) over a sliding window of time and/or count.
 * Points must arrive in time order; a point older than the latest is ignored.
 */
export class SlidingWindowVariance {
  private readonly points: { value: number; atMs: number }[] = [];

  constructor(private readonly options: SlidingWindowOptions = { maxPoints: 30 }) {
    if (options.windowMs === undefined && options.maxPoints === undefined) {
      throw new Error('SlidingWindowVariance needs windowMs or maxPoints');
    }
  }

  add(value: number, atMs: number): void {
    if (!Number.isFinite(value)) return;
    const latest = this.points.at(-1);
    if (latest && atMs < latest.atMs) return;
    this.points.push({ value, atMs });
    if (this.options.windowMs !== undefined) {
      const cutoff = atMs - this.options.windowMs;
      while (this.points.length && this.points[0].atMs < cutoff) this.points.shift();
    }
    if (this.options.maxPoints !== undefined) {
      while (this.points.length > this.options.maxPoints) this.points.shift();
    }
  }

  get size(): number {
    return this.points.length;
  }

  variance(): number | undefined {
    return variance(this.points.map((p) => p.value));
  }

  /** True/false once the window has two points; undefined before. */
  isHealthy(threshold = KV_HIT_RATE_VARIANCE_HEALTHY_BELOW): boolean | undefined {
    const v = this.variance();
    return v === undefined ? undefined : v < threshold;
  }
}
