import { cosineSimilarity, type Embedder } from '@fathom/semantic';
import type { SeededRandom } from '../../random/seeded-random';

/**
 * A small built-in synonym table (lower case, both directions where the meaning allows). Meaning-
 * preserving in common English; not a thesaurus.
 */
export const SYNONYMS: Readonly<Record<string, readonly string[]>> = {
  big: ['large', 'huge'],
  large: ['big', 'sizable'],
  small: ['little', 'tiny'],
  little: ['small'],
  fast: ['quick', 'rapid'],
  quick: ['fast', 'rapid'],
  slow: ['sluggish', 'unhurried'],
  help: ['assist', 'aid'],
  start: ['begin', 'launch'],
  begin: ['start'],
  end: ['finish', 'conclude'],
  finish: ['complete', 'end'],
  show: ['display', 'present'],
  buy: ['purchase'],
  get: ['obtain', 'receive'],
  make: ['create', 'build'],
  build: ['construct', 'make'],
  use: ['utilize', 'employ'],
  need: ['require'],
  want: ['wish', 'desire'],
  answer: ['reply', 'response'],
  ask: ['inquire', 'request'],
  change: ['modify', 'alter'],
  fix: ['repair', 'correct'],
  error: ['fault', 'mistake'],
  problem: ['issue', 'difficulty'],
  issue: ['problem'],
  important: ['crucial', 'essential'],
  easy: ['simple', 'straightforward'],
  simple: ['easy', 'plain'],
  hard: ['difficult', 'tough'],
  difficult: ['hard', 'tough'],
  good: ['fine', 'decent'],
  bad: ['poor'],
  often: ['frequently'],
  maybe: ['perhaps'],
  about: ['regarding', 'concerning'],
  explain: ['describe', 'clarify'],
  find: ['locate', 'discover'],
  choose: ['select', 'pick'],
  select: ['choose', 'pick'],
  keep: ['retain', 'preserve'],
  stop: ['halt', 'cease'],
  send: ['transmit', 'dispatch'],
  check: ['verify', 'inspect'],
  understand: ['grasp', 'comprehend'],
  quickly: ['rapidly', 'swiftly'],
  usually: ['typically', 'generally'],
  enough: ['sufficient'],
  main: ['primary', 'principal'],
  method: ['approach', 'technique'],
  way: ['manner', 'method'],
  result: ['outcome'],
  idea: ['notion', 'concept'],
  car: ['automobile', 'vehicle'],
  house: ['home', 'residence'],
  job: ['task', 'role'],
  price: ['cost'],
  cost: ['price', 'expense'],
  money: ['funds', 'cash'],
};

/** Words the embedding-noise step may leave out. */
const DISPENSABLE = new Set([
  'really',
  'very',
  'quite',
  'just',
  'simply',
  'please',
  'also',
  'actually',
  'basically',
]);

/** Replaces each word that has a synonym with probability `rate` (case of the first letter kept). */
export function substituteSynonyms(text: string, random: SeededRandom, rate = 0.5): string {
  const substituted = new Set<string>();
  const out = text.replace(/\p{L}+/gu, (word) => {
    const options = SYNONYMS[word.toLowerCase()];
    if (!options || random.next() >= rate) return word;
    const replacement = options[random.int(options.length)];
    substituted.add(replacement);
    return matchCase(word, replacement);
  });
  return fixArticles(out, substituted);
}

/**
 * "a error" -> "an error", "an problem" -> "a problem" before the given (substituted) words only,
 * by the first letter (a heuristic).
 */
export function fixArticles(text: string, words: ReadonlySet<string>): string {
  return text.replace(/\b([Aa])(n?) (\p{L}+)/gu, (all, a: string, n: string, word: string) => {
    if (!words.has(word.toLowerCase())) return all;
    const vowel = /^[aeiou]/i.test(word) && !/^(use|uni|eu|one)/i.test(word);
    if (vowel === (n === 'n')) return all;
    return `${a}${vowel ? 'n' : ''} ${word}`;
  });
}

/**
 * A sentence rewrite by clause reordering: "X, because|when|if|although|since|while|after|before
 * Y." becomes "Because Y, x." and "If Y, X." becomes "X if y."; sentences without such a clause
 * stay as they are. Returns the text unchanged when no sentence could be rewritten.
 */
export function reorderClauses(text: string): string {
  const sentences = text.match(/[^.!?]+[.!?]*\s*/g) ?? [text];
  return sentences
    .map((s) => {
      const trail = s.match(/\s*$/)?.[0] ?? '';
      const body = s.slice(0, s.length - trail.length);
      const end = body.match(/[.!?]+$/)?.[0] ?? '';
      const core = body.slice(0, body.length - end.length);
      const conj = '(because|when|if|although|since|while|after|before|unless)';
      const trailing = core.match(new RegExp(`^(.+?),? ${conj} (.+)$`, 'i'));
      if (trailing && !/^\s*(because|when|if|although|since|while|after|before|unless)\b/i.test(core)) {
        const [, main, c, sub] = trailing;
        return `${capitalize(c.toLowerCase())} ${sub}, ${lowerFirst(main)}${end}${trail}`;
      }
      const leading = core.match(new RegExp(`^${conj} ([^,]+), (.+)$`, 'i'));
      if (leading) {
        const [, c, sub, main] = leading;
        return `${capitalize(main)} ${c.toLowerCase()} ${sub}${end}${trail}`;
      }
      return s;
    })
    .join('');
}

export interface NoiseResult {
  text: string;
  epsilon: number;
  /** Cosine between the chosen text's embedding and the noised target. */
  targetCosine: number;
  candidates: number;
}

/**
 * Embedding-space noise: the text's (unit) embedding is moved by a random direction of length
 * `epsilon` (spec: 0.05..0.3), and of the one-word edits of the text (each synonym substitution,
 * each dispensable word left out) the one whose embedding lies nearest that noised point is
 * returned. null when the text has no such edit. At most `maxCandidates` edits are embedded.
 */
export async function embeddingNoise(
  text: string,
  embedder: Embedder,
  epsilon: number,
  random: SeededRandom,
  maxCandidates = 8,
): Promise<NoiseResult | null> {
  if (!(epsilon >= 0.05 && epsilon <= 0.3)) throw new RangeError(`epsilon ${epsilon} is outside 0.05..0.3`);
  const words = [...text.matchAll(/\p{L}+/gu)];
  const candidates: string[] = [];
  for (const m of words) {
    const at = m.index ?? 0;
    const word = m[0];
    const lower = word.toLowerCase();
    for (const s of SYNONYMS[lower] ?? [])
      candidates.push(text.slice(0, at) + matchCase(word, s) + text.slice(at + word.length));
    if (DISPENSABLE.has(lower)) {
      const rest = text.slice(at + word.length).replace(/^\s+/, '');
      candidates.push(at === 0 ? capitalize(rest) : (text.slice(0, at) + rest).replace(/\s+/g, ' '));
    }
  }
  // A seeded shuffle, then the first maxCandidates: bounded embedding cost, reproducible.
  for (let i = candidates.length - 1; i > 0; i--) {
    const j = random.int(i + 1);
    [candidates[i], candidates[j]] = [candidates[j], candidates[i]];
  }
  const chosen = [...new Set(candidates)].slice(0, maxCandidates);
  if (chosen.length === 0) return null;
  const [origin, ...vectors] = await embedder.embed([text, ...chosen]);
  const direction = Array.from({ length: origin.length }, () => random.normal());
  const dirNorm = Math.hypot(...direction) || 1;
  const originNorm = Math.hypot(...origin) || 1;
  const target = Array.from(origin, (v, i) => v / originNorm + (epsilon * direction[i]) / dirNorm);
  let best = 0;
  let bestCos = -Infinity;
  vectors.forEach((v, i) => {
    const c = cosineSimilarity(v, target);
    if (c > bestCos) [best, bestCos] = [i, c];
  });
  return { text: chosen[best], epsilon, targetCosine: bestCos, candidates: chosen.length };
}

/** The replacement with the original's capitalised first letter, if it had one. */
export function matchCase(original: string, replacement: string): string {
  return /^\p{Lu}/u.test(original) ? capitalize(replacement) : replacement;
}
const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const lowerFirst = (s: string) => (/^[A-Z][a-z]/.test(s) ? s.charAt(0).toLowerCase() + s.slice(1) : s);
