import type { Embedder } from '@fathom/semantic';
import { SeededRandom } from '../../random/seeded-random';
import { cleanCorpus, cleanText } from './clean';
import { DEFAULT_FACTORY_OPTIONS, SPEC_GATES, buildDataset, type DataFactoryOptions } from './data-factory';
import { TrigramLanguageModel, jaccard, ngramSet, tokenize } from './ngram';
import { SYNONYMS, embeddingNoise, fixArticles, reorderClauses, substituteSynonyms } from './perturb';

/**
 * A deterministic test embedder: a bag of hashed words in 64 dimensions, so texts that share words
 * lie close. `far` texts (exact match) get an orthogonal vector, to drive the consistency gate.
 */
class BagOfWordsEmbedder implements Embedder {
  readonly name = 'bag-of-words(test)';
  readonly dimensions = 64;
  calls = 0;
  constructor(private readonly far: ReadonlySet<string> = new Set()) {}
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.calls += texts.length;
    return texts.map((t) => {
      const v = new Float32Array(this.dimensions);
      if (this.far.has(t)) {
        v[63] = 1;
        return v;
      }
      for (const w of tokenize(t)) {
        let h = 7;
        for (const ch of w) h = (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0;
        v[h % 63] += 1;
      }
      return v;
    });
  }
}

const options = (over: Partial<DataFactoryOptions> = {}): DataFactoryOptions => ({
  ...DEFAULT_FACTORY_OPTIONS,
  embedder: null,
  ...over,
});

describe('cleaning', () => {
  it('strips control and zero-width characters, collapses whitespace, NFKC-normalises', () => {
    expect(cleanText('  a\u0007b\u200b c\t\td\r\n ｅ  ')).toBe('a b c d e');
  });

  it('splits paragraphs on blank lines, drops empty, duplicate, short and long units and counts them', () => {
    const raw =
      'one two three four\nstill para one\n\n\n\nONE TWO three four\nstill para one\n\nhi\n\n' +
      `${'w '.repeat(30)}\n\nfive six seven eight`;
    const r = cleanCorpus(raw, { minWords: 3, maxWords: 20 });
    expect(r.items).toEqual(['one two three four still para one', 'five six seven eight']);
    expect(r.dropped).toEqual({ empty: 1, duplicate: 1, tooShort: 1, tooLong: 1 });
    expect(r.read).toBe(6);
  });

  it('reads one item a line when the corpus has no blank line', () => {
    expect(cleanCorpus('a b c\nd e f\na b c\n', { minWords: 1, maxWords: 10 }).items).toEqual([
      'a b c',
      'd e f',
    ]);
  });
});

describe('perturbation', () => {
  const text = 'I need a quick fix because the car is slow.';

  it('substitutes table synonyms, seeded, keeping capitals', () => {
    const a = substituteSynonyms('Help me fix the big car', new SeededRandom(3), 1);
    expect(a).toBe(substituteSynonyms('Help me fix the big car', new SeededRandom(3), 1));
    const words = a.split(' ');
    expect(SYNONYMS.help.map((s) => s[0].toUpperCase() + s.slice(1))).toContain(words[0]);
    expect(SYNONYMS.fix).toContain(words[2]);
    expect(SYNONYMS.big).toContain(words[4]);
    expect(words[4 - 1]).toBe('the');
    expect(substituteSynonyms(text, new SeededRandom(3), 0)).toBe(text);
  });

  it('mends a/an before a substituted word only', () => {
    expect(fixArticles('an problem and an hour and a idea', new Set(['problem', 'idea']))).toBe(
      'a problem and an hour and an idea',
    );
  });

  it('reorders a trailing or leading subordinate clause, and leaves other sentences alone', () => {
    expect(reorderClauses(text)).toBe('Because the car is slow, I need a quick fix.');
    expect(reorderClauses('If it rains, we stay home. Then we read.')).toBe(
      'We stay home if it rains. Then we read.',
    );
    expect(reorderClauses('Nothing to reorder here.')).toBe('Nothing to reorder here.');
  });

  it('embedding noise picks, among one-word edits, the nearest to a noised point at epsilon', async () => {
    const embedder = new BagOfWordsEmbedder();
    const a = await embeddingNoise('Please help me buy a big car', embedder, 0.2, new SeededRandom(5));
    const b = await embeddingNoise('Please help me buy a big car', embedder, 0.2, new SeededRandom(5));
    expect(a).toEqual(b);
    expect(a?.text).not.toBe('Please help me buy a big car');
    expect(a?.candidates).toBeGreaterThan(1);
    expect(a?.candidates).toBeLessThanOrEqual(8);
    expect(a?.text.split(' ')).toHaveLength(a?.text.startsWith('Please') ? 7 : 6);
    expect(a?.text).toMatch(/^[A-Z]/);
    expect(await embeddingNoise('Zebras graze there', embedder, 0.1, new SeededRandom(5))).toBeNull();
    await expect(embeddingNoise('x', embedder, 0.31, new SeededRandom(5))).rejects.toThrow(/0.05..0.3/);
    await expect(embeddingNoise('x', embedder, 0.01, new SeededRandom(5))).rejects.toThrow(/0.05..0.3/);
  });

  it('embedding noise lands on the edit nearest the noised point, whatever the seed', async () => {
    // Every edit but one is embedded far (orthogonal) from the source; a small epsilon keeps the
    // target near the source, so that one edit must win.
    const far = new Set(['Assist me fix it', 'Aid me fix it', 'Help me correct it']);
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = await embeddingNoise(
        'Help me fix it',
        new BagOfWordsEmbedder(far),
        0.05,
        new SeededRandom(seed),
      );
      expect(r).toMatchObject({ text: 'Help me repair it', candidates: 4 });
    }
  });
});

describe('n-gram measures', () => {
  const corpus = ['the cat sat on the mat', 'the dog sat on the log', 'a cat and a dog met'];
  const lm = new TrigramLanguageModel(corpus);

  it('gives next-token probabilities that sum to 1 over the vocabulary and <unk>', () => {
    const vocab = [...new Set(corpus.flatMap(tokenize)), '</s>'];
    for (const [u, v] of [
      ['the', 'cat'],
      ['<s>', '<s>'],
      ['zebra', 'quux'],
    ]) {
      const known = vocab.reduce((s, w) => s + lm.probability(u, v, w), 0);
      expect(known + lm.probability(u, v, 'never-seen-word')).toBeCloseTo(1, 9);
    }
  });

  it("scores the corpus's own word order lower than a scramble or unseen words", () => {
    const own = lm.perplexity('the cat sat on the mat');
    expect(own).toBeLessThan(lm.perplexity('mat the on sat cat the'));
    expect(own).toBeLessThan(lm.perplexity('the feline rested upon the rug'));
  });

  it('measures n-gram Jaccard similarity', () => {
    expect([...ngramSet('A b c', 2)]).toEqual(['a b', 'b c']);
    expect(jaccard(ngramSet('a b c', 2), ngramSet('a b d', 2))).toBeCloseTo(1 / 3);
    expect(jaccard(new Set(), new Set())).toBe(0);
  });
});

describe(buildDataset.name, () => {
  const corpus = [
    'I need a quick fix because the server is slow today.',
    'Please explain the main idea of this method in simple words.',
    'If the job fails at night, send a message to the team.',
    'Show me the price of a small house near the lake before I buy it.',
    'Zebras graze quietly on the open plains of the savanna.',
  ].join('\n\n');

  it('is deterministic for a seed and differs across seeds', async () => {
    const a = await buildDataset(corpus, options({ seed: 7, embedder: new BagOfWordsEmbedder() }));
    const b = await buildDataset(corpus, options({ seed: 7, embedder: new BagOfWordsEmbedder() }));
    expect(a).toEqual(b);
    const prompts = async (seed: number) =>
      (await buildDataset(corpus, options({ seed, gates: { ...SPEC_GATES, minDiversity: 0 } }))).records.map(
        (r) => r.prompt,
      );
    expect(await prompts(1)).not.toEqual(await prompts(2));
  });

  it('writes only perturbed items that pass every gate, with their scores', async () => {
    const { records, report } = await buildDataset(corpus, options({ embedder: new BagOfWordsEmbedder() }));
    expect(records.length).toBeGreaterThan(0);
    const cleaned = corpus.split('\n\n');
    for (const r of records) {
      expect(r.prompt).not.toBe(cleaned[r.source]);
      expect(r.perturbations.length).toBeGreaterThan(0);
      expect(r.consistency).toBeGreaterThanOrEqual(0.42);
      expect(r.perplexity).toBeLessThanOrEqual(15.6);
      expect(r.diversity).toBeGreaterThanOrEqual(0.67);
      if (r.perturbations.includes('embedding-noise')) {
        expect(r.epsilon).toBeGreaterThanOrEqual(0.05);
        expect(r.epsilon).toBeLessThanOrEqual(0.3);
      }
    }
    expect(report.written).toBe(records.length);
    expect(report.gates.map((g) => [g.gate, g.threshold])).toEqual([
      ['semantic-consistency', 'cosine >= 0.42'],
      ['perplexity', '<= 15.6'],
      ['ngram-jaccard-diversity', '1 - max Jaccard(2-grams) >= 0.67'],
    ]);
    // Each gate passes on what the one before kept.
    expect(report.gates[1].in).toBe(report.gates[0].kept);
    expect(report.gates[2].in).toBe(report.gates[1].kept);
    expect(report.gates[2].kept).toBe(records.length);
    expect(report.perplexityModel).toMatch(/built from the cleaned corpus itself/);
  });

  it('the consistency gate drops a variant whose embedding strays from its source', async () => {
    const base = await buildDataset(corpus, options({ embedder: new BagOfWordsEmbedder() }));
    const victim = base.records[0].prompt;
    const { records, report } = await buildDataset(
      corpus,
      options({ embedder: new BagOfWordsEmbedder(new Set([victim])) }),
    );
    expect(records.map((r) => r.prompt)).not.toContain(victim);
    expect(report.gates[0].droppedExamples).toContainEqual({ prompt: victim, score: 0 });
    expect(report.gates[0].dropped).toBe(base.report.gates[0].dropped + 1);
  });

  it('the perplexity gate drops variants above the threshold', async () => {
    const loose = await buildDataset(
      corpus,
      options({ gates: { ...SPEC_GATES, maxPerplexity: 1e9, minDiversity: 0 } }),
    );
    const limit = [...loose.records.map((r) => r.perplexity)].sort((x, y) => x - y)[1];
    const strict = await buildDataset(
      corpus,
      options({ gates: { ...SPEC_GATES, maxPerplexity: limit, minDiversity: 0 } }),
    );
    expect(strict.records.length).toBe(loose.records.filter((r) => r.perplexity <= limit).length);
    expect(strict.report.gates[1].dropped).toBeGreaterThan(0);
    for (const d of strict.report.gates[1].droppedExamples) expect(d.score).toBeGreaterThan(limit);
  });

  it('the diversity gate keeps at most the dissimilar variants of each item', async () => {
    const all = await buildDataset(corpus, options({ gates: { ...SPEC_GATES, minDiversity: 0 } }));
    const gated = await buildDataset(corpus, options());
    expect(gated.records.length).toBeLessThan(all.records.length);
    const sets = gated.records.map((r) => ngramSet(r.prompt, 2));
    for (let i = 0; i < sets.length; i++)
      for (let j = 0; j < i; j++) expect(1 - jaccard(sets[i], sets[j])).toBeGreaterThanOrEqual(0.67);
  });

  it('without an embedder: no noise, and the consistency gate is reported as not applied', async () => {
    const { records, report } = await buildDataset(corpus, options());
    expect(
      records.some((r) => r.perturbations.includes('embedding-noise') || r.consistency !== undefined),
    ).toBe(false);
    expect(report.gates[0]).toMatchObject({ applied: false, note: 'skipped: no embedder', in: 0 });
    expect(report.perturbed.embeddingNoise).toBe('off (no embedder)');
  });
});
