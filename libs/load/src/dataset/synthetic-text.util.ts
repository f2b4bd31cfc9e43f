import type { TokenLength } from '@fathom/contracts';
import type { SeededRandom } from '../random/seeded-random';

/** What synthetic text needs of a tokenizer (see `TextTokenizer`). */
export interface WordTokenizer {
  readonly name: string;
  count(text: string): number;
  readonly oneTokenWords: readonly string[];
}

// Common English words, each exactly one token with a leading space in gpt-tokenizer's default
// encoding (checked in synthetic-text.util.spec.ts), so n words make a text of n tokens.
export const ONE_TOKEN_WORDS = (
  'the of and to in is you that it he was for on are as with his they at be this have from or one had by ' +
  'word but not what all were we when your can said there use an each which she do how their if will up ' +
  'other about out many then them these so some her would make like him into time has look two more write ' +
  'go see number no way could people my than first water been call who oil its now find long down day did ' +
  'get come made may part'
).split(' ');

/** A token length drawn from a clipped, rounded normal distribution. */
export function drawTokenLength(random: SeededRandom, d: TokenLength): number {
  const raw = Math.round(random.normal(d.mean, d.stdev));
  return Math.min(d.max, Math.max(d.min, raw));
}

/** A text of `tokens` one-token words, drawn with `random`. */
export function syntheticText(
  random: SeededRandom,
  tokens: number,
  words: readonly string[] = ONE_TOKEN_WORDS,
): string {
  const out = new Array<string>(tokens);
  for (let i = 0; i < tokens; i++) out[i] = words[random.int(words.length)];
  return out.join(' ');
}

/**
 * A text of exactly `tokens` tokens in `tokenizer` (vllm bench's `random` dataset, GuideLLM's
 * synthetic data): its one-token words, then checked by counting, and words added or taken off
 * until the count is exact (a tokenizer may merge across words). Throws if it cannot be made exact.
 */
export function exactSyntheticText(random: SeededRandom, tokens: number, tokenizer: WordTokenizer): string {
  const words = tokenizer.oneTokenWords;
  const parts = syntheticText(random, tokens, words).split(' ');
  for (let attempt = 0; attempt < 32; attempt++) {
    const text = parts.join(' ');
    const count = tokens === 0 ? 0 : tokenizer.count(text);
    if (count === tokens) return text;
    if (count > tokens) parts.pop();
    else parts.push(words[random.int(words.length)]);
  }
  throw new Error(`cannot make a text of exactly ${tokens} tokens in ${tokenizer.name}`);
}
