import fc from 'fast-check';
import { AdversarialEntropySchema, type TokenLogprob } from '@fathom/contracts';
import { assessHallucinationRisk, type Embedder } from '@fathom/semantic';
import { SeededRandom } from '../random/seeded-random';
import {
  embeddingKl,
  entropyPeak,
  probeAdversarialEntropy,
  promptAnchor,
  variantsAround,
  wordsOf,
} from './adversarial-entropy.perturbation';

/** A token whose alternatives are flat (10 x 0.1: 3.3 bits) or peaked (about 0.25 bits). */
function token(text: string, flat: boolean): TokenLogprob {
  const ps = flat ? Array<number>(10).fill(0.1) : [0.97, 0.01, 0.01, 0.005, 0.005];
  return {
    token: text,
    logprob: Math.log(ps[0]),
    top: ps.map((p, i) => ({ token: i === 0 ? text : ` alt${i}`, logprob: Math.log(p) })),
  };
}

const PROMPT = 'Please explain the main method to fix a big problem quickly and check the result.';

describe('adversarial-entropy', () => {
  describe(embeddingKl.name, () => {
    it('is 0 for the same direction and close to 1 - cosine for near vectors', () => {
      const d = 512;
      const random = new SeededRandom(7);
      const a = Float32Array.from({ length: d }, () => random.normal());
      expect(
        embeddingKl(
          a,
          a.map((x) => 3 * x),
        ),
      ).toBeCloseTo(0, 12);
      const noise = Float32Array.from({ length: d }, () => random.normal());
      for (const eps of [0.2, 0.4, 0.6]) {
        const b = a.map((x, i) => x + eps * noise[i]);
        const cos = dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b));
        const kl = embeddingKl(a, b);
        expect(Math.abs(kl - (1 - cos))).toBeLessThan(0.25 * (1 - cos) + 0.005);
      }
    });

    it('is never negative (property)', () => {
      fc.assert(
        fc.property(
          fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: 4, maxLength: 4 }),
          fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: 4, maxLength: 4 }),
          (x, y) => embeddingKl(Float32Array.from(x), Float32Array.from(y)) >= 0,
        ),
      );
    });

    it('refuses vectors of different dimensions', () => {
      expect(() => embeddingKl(new Float32Array(3), new Float32Array(4))).toThrow(/different/);
    });
  });

  it('finds the entropy peak where the window mean is highest', () => {
    const tokens = [...'abcdefghijkl'].map((c, i) => token(` ${c}`, i >= 5 && i <= 9));
    const peak = entropyPeak(assessHallucinationRisk(tokens));
    expect(peak?.position).toBe(7);
    expect(peak?.windowMeanBits).toBeGreaterThan(1.5);
  });

  describe(promptAnchor.name, () => {
    const words = wordsOf(PROMPT);
    it('anchors on the last prompt word the response echoed up to the peak', () => {
      const response = [' The', ' method', ' works', ' and', ' the', ' problem', ' goes', ' away', ' fast'];
      expect(words[promptAnchor(words, response, 6)].word).toBe('problem');
      expect(words[promptAnchor(words, response, 3)].word).toBe('method');
    });
    it('falls back to the relative position without an echo', () => {
      const response = [' zz', ' yy', ' xx', ' ww', ' vv'];
      expect(promptAnchor(words, response, 0)).toBe(0);
      expect(promptAnchor(words, response, 4)).toBe(words.length - 1);
    });
  });

  describe(variantsAround.name, () => {
    it('replaces min..max words with synonyms, the nearest to the anchor, deterministically', () => {
      const words = wordsOf(PROMPT);
      const anchor = words.findIndex((w) => w.word === 'problem');
      const make = () => variantsAround(PROMPT, anchor, { min: 3, max: 5 }, 3, new SeededRandom(2));
      const variants = make();
      expect(variants.length).toBe(3);
      expect(make()).toEqual(variants);
      for (const v of variants) {
        expect(v.substitutions.length).toBeGreaterThanOrEqual(3);
        expect(v.substitutions.length).toBeLessThanOrEqual(5);
        expect(v.text).not.toBe(PROMPT);
        expect(wordsOf(v.text).length).toBe(words.length);
      }
      // k = 3: the three synonym-bearing words nearest "problem" (big and quickly beside it).
      const three = variants.find((v) => v.substitutions.length === 3)!;
      expect(three.substitutions.map((s) => s.split(' -> ')[0]).sort()).toEqual([
        'big',
        'problem',
        'quickly',
      ]);
    });

    it('makes nothing when fewer than min words have synonyms', () => {
      expect(
        variantsAround('Tell me a story about dragons.', 0, { min: 3, max: 7 }, 4, new SeededRandom(1)),
      ).toEqual([]);
    });
  });

  describe(probeAdversarialEntropy.name, () => {
    // An embedder that reads only which words a text has: variants with more substitutions
    // are further away (their KL grows with the words changed).
    const bagOfWords: Embedder = {
      name: 'bag-of-words',
      dimensions: 64,
      embed: async (texts) =>
        texts.map((t) => {
          const v = new Float32Array(64);
          for (const w of wordsOf(t.toLowerCase())) v[hash(w.word) % 64] += 1;
          return v;
        }),
    };
    const config = AdversarialEntropySchema.parse({ kind: 'adversarial-entropy', variants: 5, maxKl: 0.25 });

    it('keeps only variants within the KL bound, sends them, and reports risk before and after', async () => {
      const sent: string[] = [];
      const complete = async (prompt: string) => {
        sent.push(prompt);
        // The original is confident except for a flat stretch; the variants are flat throughout.
        return prompt === PROMPT
          ? Array.from({ length: 12 }, (_, i) => token(` t${i}`, i >= 5 && i <= 9))
          : Array.from({ length: 12 }, (_, i) => token(` t${i}`, true));
      };
      const { probes, sendable } = await probeAdversarialEntropy(
        [PROMPT, 'Tell me a story about dragons.'],
        config,
        { complete, embedder: bagOfWords },
        2,
      );
      expect(probes).toHaveLength(2);
      const [ok, skipped] = probes;
      expect(ok).toMatchObject({ shard: 2, promptIndex: 0, status: 'ok' });
      expect(ok.peak?.position).toBeGreaterThanOrEqual(5);
      expect(ok.before?.segments).toBeGreaterThan(0);
      const kept = ok.variants.filter((v) => v.kept);
      const dropped = ok.variants.filter((v) => !v.kept);
      expect(kept.length).toBeGreaterThan(0);
      expect(dropped.length).toBeGreaterThan(0);
      for (const v of kept) {
        expect(v.kl).toBeLessThanOrEqual(config.maxKl);
        expect(v.after?.maxWindowMeanBits).toBeGreaterThan(ok.before!.maxWindowMeanBits!);
        expect(v.deltaBits).toBeGreaterThan(0);
      }
      for (const v of dropped) {
        expect(v.kl).toBeGreaterThan(config.maxKl);
        expect(v.after).toBeNull();
        expect(sent).not.toContain(v.text);
      }
      expect(sendable).toEqual(kept.map((v) => v.text));
      expect(skipped).toMatchObject({
        status: 'skipped',
        reason: expect.stringMatching(/fewer than 3 words/),
      });
    });

    it('skips a prompt whose probe failed or came back without alternatives, without throwing', async () => {
      const { probes } = await probeAdversarialEntropy(
        [PROMPT, PROMPT],
        { ...config, prompts: 2 },
        {
          complete: async (p) => {
            if (p === PROMPT && probes0++ === 0) throw new Error('HTTP 503: busy');
            return [{ token: ' a', logprob: -0.1, top: [] }];
          },
          embedder: bagOfWords,
        },
      );
      expect(probes[0]).toMatchObject({ status: 'skipped', reason: 'probe request failed: HTTP 503: busy' });
      expect(probes[1]).toMatchObject({
        status: 'skipped',
        reason: expect.stringMatching(/no-top-logprobs/),
      });
    });
    let probes0 = 0;
  });

  it('validates its settings (tokens.min <= tokens.max)', () => {
    expect(
      AdversarialEntropySchema.safeParse({ kind: 'adversarial-entropy', tokens: { min: 5, max: 3 } }).success,
    ).toBe(false);
    expect(AdversarialEntropySchema.parse({ kind: 'adversarial-entropy' })).toMatchObject({
      tokens: { min: 3, max: 7 },
      maxKl: 0.15,
    });
  });
});

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

function hash(word: string): number {
  let h = 2166136261;
  for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619);
  return h >>> 0;
}
