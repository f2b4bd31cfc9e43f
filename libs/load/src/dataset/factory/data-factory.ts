import { cosineSimilarity, type Embedder } from '@fathom/semantic';
import { SeededRandom, deriveSeed } from '../../random/seeded-random';
import { cleanCorpus, type CleanResult } from './clean';
import { TrigramLanguageModel, jaccard, ngramSet } from './ngram';
import { embeddingNoise, reorderClauses, substituteSynonyms } from './perturb';

/** The spec's quality gates ("cross-modal test data factory"). */
export const SPEC_GATES = { minConsistency: 0.42, maxPerplexity: 15.6, minDiversity: 0.67 } as const;
export const GATE_SOURCE = 'SPEC.md, cross-modal test data factory';

export interface DataFactoryOptions {
  seed: number;
  /** Null: no embedding noise and no semantic-consistency gate (both said so in the report). */
  embedder: Embedder | null;
  minWords: number;
  maxWords: number;
  /** Probability that a word with a synonym is substituted. */
  synonymRate: number;
  /** Embedding noise radius range, inside the spec's 0.05..0.3. */
  epsilon: readonly [number, number];
  /** n of the word n-grams compared by the diversity gate. */
  diversityN: number;
  gates: { minConsistency: number; maxPerplexity: number; minDiversity: number };
}

export const DEFAULT_FACTORY_OPTIONS: Omit<DataFactoryOptions, 'embedder'> = {
  seed: 1,
  minWords: 4,
  maxWords: 200,
  synonymRate: 0.5,
  epsilon: [0.05, 0.3],
  diversityN: 2,
  gates: { ...SPEC_GATES },
};

export type FactoryPerturbation = 'synonym' | 'clause-reorder' | 'embedding-noise';

/** One line of the output (a `jsonl` campaign dataset reads `prompt`). */
export interface FactoryRecord {
  prompt: string;
  /** Index of the cleaned item it came from. */
  source: number;
  perturbations: FactoryPerturbation[];
  epsilon?: number;
  consistency?: number;
  perplexity: number;
  diversity: number;
}

export interface GateReport {
  gate: 'semantic-consistency' | 'perplexity' | 'ngram-jaccard-diversity';
  threshold: string;
  source: string;
  applied: boolean;
  note?: string;
  in: number;
  kept: number;
  dropped: number;
  /** Up to three dropped texts with the score that dropped them. */
  droppedExamples: { prompt: string; score: number }[];
}

export interface FactoryReport {
  corpus: { read: number; cleaned: number; dropped: CleanResult['dropped'] };
  perturbed: { candidates: number; byKind: Record<FactoryPerturbation, number>; embeddingNoise: string };
  perplexityModel: string;
  gates: GateReport[];
  written: number;
}

interface Candidate {
  prompt: string;
  source: number;
  perturbations: FactoryPerturbation[];
  epsilon?: number;
  consistency?: number;
  perplexity?: number;
  diversity?: number;
}

/**
 * Raw corpus -> cleaned -> perturbed -> quality gates -> records. Per cleaned item the variants
 * are: synonym substitution, clause reordering, both, and (with an embedder) embedding noise on
 * top of both; variants equal to their source or to another variant are not kept. Gates run in
 * order (consistency with the source by embedding cosine, perplexity under a trigram model of the
 * cleaned corpus, n-gram Jaccard diversity against the items kept before, greedily in order).
 * Deterministic for a seed and an embedder.
 */
export async function buildDataset(
  corpus: string,
  options: DataFactoryOptions,
): Promise<{ records: FactoryRecord[]; report: FactoryReport }> {
  const { gates } = options;
  const cleaned = cleanCorpus(corpus, options);
  const byKind: Record<FactoryPerturbation, number> = {
    synonym: 0,
    'clause-reorder': 0,
    'embedding-noise': 0,
  };
  const candidates: Candidate[] = [];
  for (const [i, item] of cleaned.items.entries()) {
    const random = new SeededRandom(deriveSeed(options.seed, i));
    const synonym = substituteSynonyms(item, random, options.synonymRate);
    const reordered = reorderClauses(item);
    const both = reorderClauses(synonym);
    const made = new Map<string, FactoryPerturbation[]>([[item, []]]);
    const add = (prompt: string, perturbations: FactoryPerturbation[], epsilon?: number) => {
      if (made.has(prompt)) return;
      made.set(prompt, perturbations);
      candidates.push({ prompt, source: i, perturbations, ...(epsilon === undefined ? {} : { epsilon }) });
      for (const k of perturbations) byKind[k]++;
    };
    add(synonym, ['synonym']);
    add(reordered, ['clause-reorder']);
    add(both, [
      ...(both !== reordered ? (['synonym'] as const) : []),
      ...(both !== synonym ? (['clause-reorder'] as const) : []),
    ]);
    if (options.embedder) {
      const [lo, hi] = options.epsilon;
      const epsilon = lo + (hi - lo) * random.next();
      const noised = await embeddingNoise(both, options.embedder, epsilon, random);
      if (noised) {
        const base = made.get(both) ?? [];
        add(noised.text, [...base, 'embedding-noise'], round(epsilon));
      }
    }
  }

  const report: FactoryReport = {
    corpus: { read: cleaned.read, cleaned: cleaned.items.length, dropped: cleaned.dropped },
    perturbed: {
      candidates: candidates.length,
      byKind,
      embeddingNoise: options.embedder
        ? `on, epsilon drawn in ${options.epsilon[0]}..${options.epsilon[1]} per item, ${options.embedder.name}`
        : 'off (no embedder)',
    },
    perplexityModel:
      'perplexity here is under a word trigram model (Jelinek-Mercer interpolation, add-one unigram, <unk>) ' +
      'built from the cleaned corpus itself (sources included, so a variant close to its source scores low), ' +
      'not under a pretrained language model',
    gates: [],
    written: 0,
  };

  // Gate 1: semantic consistency with the source item.
  let pool = candidates;
  if (options.embedder) {
    const vectors = await options.embedder.embed([...cleaned.items, ...pool.map((c) => c.prompt)]);
    pool.forEach(
      (c, k) =>
        (c.consistency = round(cosineSimilarity(vectors[c.source], vectors[cleaned.items.length + k]))),
    );
    pool = gate(
      report,
      pool,
      'semantic-consistency',
      `cosine >= ${gates.minConsistency}`,
      true,
      (c) => c.consistency!,
      (s) => s >= gates.minConsistency,
    );
  } else {
    gate(
      report,
      [],
      'semantic-consistency',
      `cosine >= ${gates.minConsistency}`,
      false,
      () => 0,
      () => true,
      'skipped: no embedder',
    );
  }

  // Gate 2: perplexity under the corpus's own n-gram model.
  const lm = new TrigramLanguageModel(cleaned.items);
  for (const c of pool) c.perplexity = round(lm.perplexity(c.prompt));
  pool = gate(
    report,
    pool,
    'perplexity',
    `<= ${gates.maxPerplexity}`,
    true,
    (c) => c.perplexity!,
    (s) => s <= gates.maxPerplexity,
  );

  // Gate 3: diversity against the items kept so far (greedy, in corpus order).
  const keptSets: Set<string>[] = [];
  for (const c of pool) {
    const set = ngramSet(c.prompt, options.diversityN);
    const maxSim = keptSets.reduce((m, k) => Math.max(m, jaccard(set, k)), 0);
    c.diversity = round(1 - maxSim);
    if (c.diversity >= gates.minDiversity) keptSets.push(set);
  }
  pool = gate(
    report,
    pool,
    'ngram-jaccard-diversity',
    `1 - max Jaccard(${options.diversityN}-grams) >= ${gates.minDiversity}`,
    true,
    (c) => c.diversity!,
    (s) => s >= gates.minDiversity,
  );

  const records = pool.map((c) => ({
    prompt: c.prompt,
    source: c.source,
    perturbations: c.perturbations,
    ...(c.epsilon === undefined ? {} : { epsilon: c.epsilon }),
    ...(c.consistency === undefined ? {} : { consistency: c.consistency }),
    perplexity: c.perplexity!,
    diversity: c.diversity!,
  }));
  report.written = records.length;
  return { records, report };
}

function gate(
  report: FactoryReport,
  pool: Candidate[],
  name: GateReport['gate'],
  threshold: string,
  applied: boolean,
  score: (c: Candidate) => number,
  pass: (s: number) => boolean,
  note?: string,
): Candidate[] {
  const kept = pool.filter((c) => pass(score(c)));
  const dropped = pool.filter((c) => !pass(score(c)));
  report.gates.push({
    gate: name,
    threshold,
    source: GATE_SOURCE,
    applied,
    ...(note ? { note } : {}),
    in: pool.length,
    kept: kept.length,
    dropped: dropped.length,
    droppedExamples: dropped.slice(0, 3).map((c) => ({ prompt: c.prompt, score: score(c) })),
  });
  return kept;
}

const round = (x: number) => Math.round(x * 10000) / 10000;
