/**
 * A deterministic text -> unit vector (a hashed bag of words): each lower-cased word seeds a
 * pseudo-random vector, the sum is L2-normalised. Texts that share words land near each other,
 * which is all a vector-store load test needs; it is not an embedding model.
 */
export function textVector(text: string, dimensions: number): number[] {
  const vector = new Float64Array(dimensions);
  for (const word of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (word.length === 0) continue;
    // FNV-1a over UTF-16 code units, then xorshift32 per dimension.
    let h = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193) >>> 0;
    let x = h || 1;
    for (let d = 0; d < dimensions; d++) {
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      x >>>= 0;
      vector[d] += x / 2147483648 - 1;
    }
  }
  let norm = 0;
  for (const v of vector) norm += v * v;
  norm = Math.sqrt(norm);
  // A text without words still gets a valid (non-zero) vector.
  if (norm === 0) return Array.from({ length: dimensions }, (_, d) => (d === 0 ? 1 : 0));
  return Array.from(vector, (v) => v / norm);
}
