export function cosineSimilarity(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Softmax with the max subtracted first (no overflow on large components). */
export function softmax(v: ArrayLike<number>, temperature = 1): Float64Array {
  const out = new Float64Array(v.length);
  let max = -Infinity;
  for (let i = 0; i < v.length; i++) max = Math.max(max, v[i] / temperature);
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += out[i] = Math.exp(v[i] / temperature - max);
  for (let i = 0; i < v.length; i++) out[i] /= sum;
  return out;
}

/**
 * RAG query/document mismatch (spec, anomaly class 2): KL(softmax(query) || softmax(doc)) in
 * nats. 0 when the two embeddings induce the same distribution; grows as they drift apart.
 */
export function embeddingKlDivergence(
  query: ArrayLike<number>,
  document: ArrayLike<number>,
  temperature = 1,
): number {
  const p = softmax(query, temperature);
  const q = softmax(document, temperature);
  let kl = 0;
  for (let i = 0; i < p.length; i++) if (p[i] > 0) kl += p[i] * Math.log(p[i] / Math.max(q[i], 1e-300));
  return kl;
}

export interface DriftReport {
  pairs: number;
  meanCosine: number | null;
  minCosine: number | null;
  /** Pairs whose cosine fell below `threshold`. */
  drifted: number;
}

/**
 * Responses of a run compared with the baseline run's responses to the same scenario step,
 * pair by pair (same index = same prompt).
 */
export function responseDrift(
  baseline: readonly ArrayLike<number>[],
  current: readonly ArrayLike<number>[],
  threshold = 0.8,
): DriftReport {
  const n = Math.min(baseline.length, current.length);
  if (n === 0) return { pairs: 0, meanCosine: null, minCosine: null, drifted: 0 };
  let sum = 0;
  let min = Infinity;
  let drifted = 0;
  for (let i = 0; i < n; i++) {
    const c = cosineSimilarity(baseline[i], current[i]);
    sum += c;
    min = Math.min(min, c);
    if (c < threshold) drifted++;
  }
  return { pairs: n, meanCosine: sum / n, minCosine: min, drifted };
}

// Spec, monitoring matrix: a drop of intent-recognition accuracy vs baseline below 5 % is healthy.
export const INTENT_ACCURACY_DROP_LIMIT = 0.05;

/** Relative drop of accuracy against the baseline; unhealthy at 5 % or more. */
export function intentAccuracyDrop(
  baselineAccuracy: number,
  currentAccuracy: number,
): { drop: number; healthy: boolean } {
  const drop = baselineAccuracy <= 0 ? 0 : (baselineAccuracy - currentAccuracy) / baselineAccuracy;
  return { drop, healthy: drop < INTENT_ACCURACY_DROP_LIMIT };
}
