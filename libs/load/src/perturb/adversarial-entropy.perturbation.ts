import type {
  AdversarialEntropy,
  AdversarialProbe,
  AdversarialVariant,
  RiskFigure,
  TokenLogprob,
} from '@fathom/contracts';
import { ADVERSARIAL_LIMITS } from '@fathom/contracts';
import { assessHallucinationRisk, type ConfidenceReport, type Embedder } from '@fathom/semantic';
import { fixArticles, matchCase, SYNONYMS } from '../dataset/factory/perturb';
import { SeededRandom } from '../random/seeded-random';

/**
 * Adversarial prompts after entropy peaks (spec, anomaly class 3: "perturb 3 to 7 tokens after an
 * entropy peak with meaning-preserving substitutions, KL-bounded (<= 0.15)").
 *
 * 1. The prompt is sent once with logprobs; the response's entropy peak is the position of the
 *    highest sliding-window mean entropy (libs/semantic `assessHallucinationRisk`).
 * 2. Anchor: the prompt word that produced it, read lexically: the last word of at least 4
 *    letters in the response up to the peak that also occurs in the prompt; without one, the
 *    prompt word at the peak's relative position (a heuristic: a client sees no attention).
 * 3. Variants: the `k` synonym-substitutable words nearest the anchor (k from tokens.min to
 *    tokens.max, one k per variant; "tokens" are words here) get a synonym from the data
 *    factory's table (`fathom data build`). A prompt with fewer than tokens.min such words is
 *    skipped, said so in the report.
 * 4. KL bound, on an embedding proxy: KL(P || Q) with P, Q = softmax(e / tau) of the original's
 *    and the variant's unit sentence embeddings, tau = 1 / sqrt(d). With that temperature, for
 *    near vectors KL ~= 1 - cosine (second-order expansion: KL ~= Var_P(dz) / 2 and
 *    |dz|^2 = 2 (1 - cos) d), so KL <= 0.15 reads "cosine >= ~0.85". Chosen over the KL of
 *    next-token distributions at aligned response positions because that one is undefined
 *    once two responses diverge (different prefixes), depends on sampling, and cannot gate a
 *    variant before it is sent.
 * 5. Kept variants are sent once with logprobs (their risk `after`), then join the load.
 */
export interface AdversarialDeps {
  /** Sends one prompt with logprobs and top_logprobs; resolves to the response's tokens. */
  complete(prompt: string): Promise<TokenLogprob[]>;
  embedder: Embedder;
}

export interface WordSpan {
  word: string;
  start: number;
  end: number;
}

export function wordsOf(text: string): WordSpan[] {
  return [...text.matchAll(/\p{L}+/gu)].map((m) => ({
    word: m[0],
    start: m.index ?? 0,
    end: (m.index ?? 0) + m[0].length,
  }));
}

export function riskFigure(report: ConfidenceReport): RiskFigure {
  return {
    status: report.status,
    maxWindowMeanBits: report.maxWindowMeanBits,
    meanEntropyBits: report.meanEntropyBits,
    segments: report.segments.length,
  };
}

/** Position of the highest window-mean entropy (the first of equals); null without rows. */
export function entropyPeak(report: ConfidenceReport): AdversarialProbe['peak'] {
  let best: AdversarialProbe['peak'] = null;
  for (const row of report.rows)
    if (best === null || row.windowMeanBits > best.windowMeanBits)
      best = { position: row.position, token: row.token, windowMeanBits: row.windowMeanBits };
  return best;
}

/** Word index of the prompt the substitutions cluster around (see step 2 above). */
export function promptAnchor(
  prompt: readonly WordSpan[],
  responseTokens: readonly string[],
  peak: number,
): number {
  if (prompt.length === 0) return 0;
  const index = new Map<string, number>();
  prompt.forEach((w, i) => {
    if (w.word.length >= 4) index.set(w.word.toLowerCase(), i);
  });
  const upToPeak = wordsOf(responseTokens.slice(0, peak + 1).join(''));
  for (let i = upToPeak.length - 1; i >= 0; i--) {
    const hit = index.get(upToPeak[i].word.toLowerCase());
    if (hit !== undefined) return hit;
  }
  const share = responseTokens.length > 1 ? peak / (responseTokens.length - 1) : 0;
  return Math.min(prompt.length - 1, Math.round(share * (prompt.length - 1)));
}

export interface PromptVariant {
  text: string;
  substitutions: string[];
}

/**
 * Up to `count` distinct variants of `prompt`, each replacing the k substitutable words nearest
 * `anchor` (k = min, min+1, ... max, cycling; capped by the words there are). Empty when fewer
 * than `min` words have synonyms. Deterministic for a seed.
 */
export function variantsAround(
  prompt: string,
  anchor: number,
  tokens: { min: number; max: number },
  count: number,
  random: SeededRandom,
): PromptVariant[] {
  const words = wordsOf(prompt);
  const candidates = words
    .map((w, i) => ({ ...w, i }))
    .filter((w) => SYNONYMS[w.word.toLowerCase()] !== undefined)
    .sort((a, b) => Math.abs(a.i - anchor) - Math.abs(b.i - anchor) || a.i - b.i);
  if (candidates.length < tokens.min) return [];
  const span = tokens.max - tokens.min + 1;
  const out = new Map<string, PromptVariant>();
  // Synonym draws may repeat a variant: a few tries per wanted variant, then stop.
  for (let attempt = 0; attempt < count * 4 && out.size < count; attempt++) {
    const k = Math.min(candidates.length, tokens.min + (attempt % span));
    const chosen = candidates.slice(0, k).sort((a, b) => a.start - b.start);
    let text = '';
    let at = 0;
    const substitutions: string[] = [];
    const replaced = new Set<string>();
    for (const w of chosen) {
      const options = SYNONYMS[w.word.toLowerCase()];
      const replacement = matchCase(w.word, options[random.int(options.length)]);
      text += prompt.slice(at, w.start) + replacement;
      at = w.end;
      substitutions.push(`${w.word} -> ${replacement}`);
      replaced.add(replacement.toLowerCase());
    }
    text = fixArticles(text + prompt.slice(at), replaced);
    if (!out.has(text)) out.set(text, { text, substitutions });
  }
  return [...out.values()];
}

/**
 * KL(P || Q), natural log, of P = softmax(a' / tau), Q = softmax(b' / tau), a' and b' the unit
 * vectors of a and b, tau = 1 / sqrt(d) (see step 4 above: KL ~= 1 - cosine for near vectors).
 */
export function embeddingKl(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length || a.length === 0)
    throw new RangeError(`embeddings of different or no dimensions: ${a.length} vs ${b.length}`);
  const scale = Math.sqrt(a.length);
  const za = unitScaled(a, scale);
  const zb = unitScaled(b, scale);
  const lseA = logSumExp(za);
  const lseB = logSumExp(zb);
  let kl = 0;
  for (let i = 0; i < za.length; i++) {
    const logP = za[i] - lseA;
    kl += Math.exp(logP) * (logP - (zb[i] - lseB));
  }
  return Math.max(0, kl);
}

function unitScaled(v: Float32Array, scale: number): Float64Array {
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm) || 1;
  return Float64Array.from(v, (x) => (x / norm) * scale);
}

function logSumExp(z: Float64Array): number {
  let max = -Infinity;
  for (const x of z) max = Math.max(max, x);
  let sum = 0;
  for (const x of z) sum += Math.exp(x - max);
  return max + Math.log(sum);
}

const cap = (text: string) => text.slice(0, ADVERSARIAL_LIMITS.promptChars);

/**
 * Probes the first `config.prompts` prompts (sequentially: a few requests before the load) and
 * returns one row per prompt; a failed request skips its prompt (or leaves a variant's `after`
 * null) with the reason, it never throws for the target's sake. `sendable` of the result lists
 * the kept variants' texts, in order, for the load.
 */
export async function probeAdversarialEntropy(
  prompts: readonly string[],
  config: AdversarialEntropy,
  deps: AdversarialDeps,
  shard = 0,
): Promise<{ probes: AdversarialProbe[]; sendable: string[] }> {
  const random = new SeededRandom(config.seed);
  const probes: AdversarialProbe[] = [];
  const sendable: string[] = [];
  const count = Math.min(config.prompts, prompts.length, ADVERSARIAL_LIMITS.prompts);
  for (let promptIndex = 0; promptIndex < count; promptIndex++) {
    const prompt = prompts[promptIndex];
    const row: AdversarialProbe = {
      shard,
      promptIndex,
      prompt: cap(prompt),
      status: 'skipped',
      peak: null,
      anchorWord: null,
      before: null,
      variants: [],
    };
    probes.push(row);
    let original: TokenLogprob[];
    try {
      original = await deps.complete(prompt);
    } catch (error) {
      row.reason = `probe request failed: ${(error as Error).message}`;
      continue;
    }
    const report = assessHallucinationRisk(original);
    row.before = riskFigure(report);
    row.peak = entropyPeak(report);
    if (report.status !== 'ok' || row.peak === null) {
      row.reason = `no entropy peak: the response had ${report.status === 'ok' ? 'no tokens' : report.status}`;
      continue;
    }
    const words = wordsOf(prompt);
    row.anchorWord = promptAnchor(
      words,
      original.map((t) => t.token),
      row.peak.position,
    );
    const variants = variantsAround(prompt, row.anchorWord, config.tokens, config.variants, random);
    if (variants.length === 0) {
      row.reason = `fewer than ${config.tokens.min} words with a known synonym in the prompt`;
      continue;
    }
    row.status = 'ok';
    const [origin, ...embedded] = await deps.embedder.embed([prompt, ...variants.map((v) => v.text)]);
    for (let i = 0; i < variants.length; i++) {
      const kl = embeddingKl(origin, embedded[i]);
      const variant: AdversarialVariant = {
        text: cap(variants[i].text),
        substitutions: variants[i].substitutions,
        kl,
        kept: kl <= config.maxKl,
        after: null,
        deltaBits: null,
        riskMoved: null,
      };
      row.variants.push(variant);
      if (!variant.kept) continue;
      sendable.push(variants[i].text);
      try {
        variant.after = riskFigure(assessHallucinationRisk(await deps.complete(variants[i].text)));
      } catch (error) {
        variant.error = `probe request failed: ${(error as Error).message}`;
        continue;
      }
      const before = row.before.maxWindowMeanBits;
      const after = variant.after.maxWindowMeanBits;
      if (before !== null && after !== null) variant.deltaBits = after - before;
      if (row.before.status === 'ok' && variant.after.status === 'ok')
        variant.riskMoved = row.before.segments > 0 !== variant.after.segments > 0;
    }
  }
  return { probes, sendable };
}
