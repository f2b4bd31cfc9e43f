import { fnv1a, mix32 } from './prng.util';
import { tokenize } from './tokenizer.util';

/**
 * Deterministic bag-of-tokens embedding: each token adds a pseudo-random unit-ish vector seeded
 * by its hash, and the sum is L2-normalised. Texts sharing words have higher cosine similarity,
 * which is enough for retrieval and drift tests; it is not a language model.
 */
export function embedText(text: string, dimensions: number, seed: number): Float32Array {
  const vector = new Float32Array(dimensions);
  for (const piece of tokenize(text.toLowerCase())) {
    const h = fnv1a(piece.trim(), seed >>> 0);
    for (let d = 0; d < dimensions; d++) vector[d] += mix32(h, d) / 2147483648 - 1;
  }
  return normalise(vector);
}

export function normalise(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const x of vector) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let d = 0; d < vector.length; d++) vector[d] /= norm;
  return vector;
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
