import type { TokenLength } from '@fathom/contracts';
import type { SeededRandom } from '../random/seeded-random';

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
export function syntheticText(random: SeededRandom, tokens: number): string {
  const words = new Array<string>(tokens);
  for (let i = 0; i < tokens; i++) words[i] = ONE_TOKEN_WORDS[random.int(ONE_TOKEN_WORDS.length)];
  return words.join(' ');
}
