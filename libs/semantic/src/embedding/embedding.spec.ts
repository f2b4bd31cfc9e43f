import { CachedEmbedder, fingerprint, type Embedder } from './embedder';
import {
  cosineSimilarity,
  embeddingKlDivergence,
  intentAccuracyDrop,
  responseDrift,
} from './embedding-drift.util';

/** Counts characters a-z: a real (if crude) embedder, enough to test the cache's bookkeeping. */
class LetterCountEmbedder implements Embedder {
  readonly name = 'letters';
  readonly dimensions = 26;
  calls: string[][] = [];
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.calls.push([...texts]);
    return texts.map((t) => {
      const v = new Float32Array(26);
      for (const ch of t.toLowerCase()) if (ch >= 'a' && ch <= 'z') v[ch.charCodeAt(0) - 97]++;
      return v;
    });
  }
}

describe(CachedEmbedder.name, () => {
  it('embeds only misses, once per distinct text, and expires entries with the time window', async () => {
    let now = 0;
    const inner = new LetterCountEmbedder();
    const sut = new CachedEmbedder(inner, { capacity: 10, windowMs: 1000, now: () => now });
    const first = await sut.embed(['ab', 'ab', 'cd']);
    expect(inner.calls).toEqual([['ab', 'cd']]);
    expect(Array.from(first[1]).slice(0, 4)).toEqual([1, 1, 0, 0]);
    await sut.embed(['cd', 'ef']);
    expect(inner.calls[1]).toEqual(['ef']);
    expect(sut.hits).toBe(1);
    now = 1500;
    await sut.embed(['ab']);
    expect(inner.calls[2]).toEqual(['ab']);
  });

  it('evicts the least recently used entry beyond capacity', async () => {
    const inner = new LetterCountEmbedder();
    const sut = new CachedEmbedder(inner, { capacity: 2, now: () => 0 });
    await sut.embed(['a', 'b']);
    await sut.embed(['a']); // a is now most recent
    await sut.embed(['c']); // evicts b
    await sut.embed(['a', 'b']);
    expect(inner.calls.at(-1)).toEqual(['b']);
  });

  it('fingerprints different texts differently', () => {
    expect(fingerprint('abc')).not.toBe(fingerprint('abd'));
    expect(fingerprint('abc')).toHaveLength(16);
  });
});

describe('embedding drift', () => {
  it('measures cosine drift against the baseline pair by pair', () => {
    const report = responseDrift(
      [
        [1, 0],
        [0, 1],
      ],
      [
        [1, 0],
        [1, 0],
      ],
      0.8,
    );
    expect(report).toEqual({ pairs: 2, meanCosine: 0.5, minCosine: 0, drifted: 1 });
    expect(cosineSimilarity([1, 1], [2, 2])).toBeCloseTo(1, 12);
  });

  it('gives KL 0 for identical embeddings and more for further-apart ones', () => {
    expect(embeddingKlDivergence([1, 2, 3], [1, 2, 3])).toBeCloseTo(0, 12);
    const near = embeddingKlDivergence([1, 2, 3], [1.1, 2, 2.9]);
    const far = embeddingKlDivergence([1, 2, 3], [3, 2, 1]);
    expect(near).toBeGreaterThan(0);
    expect(far).toBeGreaterThan(near);
  });

  it('calls an intent-accuracy drop of 5 % or more unhealthy', () => {
    expect(intentAccuracyDrop(0.9, 0.86).healthy).toBe(true);
    expect(intentAccuracyDrop(0.9, 0.855).healthy).toBe(false);
  });
});
