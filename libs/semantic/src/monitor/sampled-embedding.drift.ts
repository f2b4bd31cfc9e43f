import { cosineSimilarity } from '../embedding/embedding-drift.util';

export interface SampledDriftFigures {
  readonly embedded: number;
  readonly baselineSize: number;
  /** Mean cosine of post-baseline responses to the baseline centroid; null before any. */
  readonly meanCosineToBaseline: number | null;
  readonly minCosineToBaseline: number | null;
  /** Post-baseline responses whose cosine to the centroid fell below `threshold`. */
  readonly drifted: number;
}

/**
 * Response drift within a run, on the embedded sample: the first `baselineSize` sampled
 * responses form the baseline centroid; every later one is compared with it by cosine. (A
 * baseline from another run of the same scenario is `responseDrift`; this is the in-run view.)
 */
export class SampledEmbeddingDrift {
  private readonly baseline: Float32Array[] = [];
  private centroidReady: Float64Array | null = null;
  private compared = 0;
  private cosineSum = 0;
  private cosineMin = Infinity;
  private drifted = 0;

  constructor(
    private readonly baselineSize = 16,
    private readonly threshold = 0.5,
  ) {}

  add(vector: Float32Array): void {
    if (this.centroidReady === null) {
      this.baseline.push(vector);
      if (this.baseline.length >= this.baselineSize) {
        const c = new Float64Array(vector.length);
        for (const v of this.baseline) for (let i = 0; i < c.length; i++) c[i] += v[i] / this.baseline.length;
        this.centroidReady = c;
      }
      return;
    }
    const cos = cosineSimilarity(this.centroidReady, vector);
    this.compared++;
    this.cosineSum += cos;
    this.cosineMin = Math.min(this.cosineMin, cos);
    if (cos < this.threshold) this.drifted++;
  }

  figures(): SampledDriftFigures {
    return {
      embedded: this.baseline.length + this.compared,
      baselineSize: this.baseline.length,
      meanCosineToBaseline: this.compared ? this.cosineSum / this.compared : null,
      minCosineToBaseline: this.compared ? this.cosineMin : null,
      drifted: this.drifted,
    };
  }
}
