/**
 * A small seeded PRNG (mulberry32): the same seed gives the same sequence on every machine, which
 * is what makes profiles, datasets and perturbations reproducible. Not for cryptography.
 */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    // Mix the seed so that nearby seeds (1, 2, 3...) give unrelated streams.
    this.state = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ 0xc2b2ae35) >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Exponential with the given mean (Poisson-process gaps). */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }

  /**
   * Gamma with the given shape and mean (Marsaglia-Tsang; shape < 1 by boosting with U^(1/shape)).
   * Shape 1 is the exponential.
   */
  gamma(shape: number, mean: number): number {
    const boost = shape < 1 ? Math.pow(1 - this.next(), 1 / shape) : 1;
    const k = shape < 1 ? shape + 1 : shape;
    const d = k - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      let x: number;
      let v: number;
      do {
        x = this.normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const u = 1 - this.next();
      if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return (d * v * boost * mean) / shape;
    }
  }

  /** Standard normal by Box-Muller. */
  normal(mean = 0, stdev = 1): number {
    const u = 1 - this.next();
    const v = this.next();
    return mean + stdev * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
}

/** A seed for one shard (or one stream) derived from a campaign seed, so shards differ yet replay. */
export function deriveSeed(seed: number, stream: number): number {
  return (Math.imul(seed, 0x27d4eb2d) + Math.imul(stream + 1, 0x165667b1)) | 0;
}
