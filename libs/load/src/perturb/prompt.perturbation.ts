import type { PromptDamage } from '@fathom/contracts';
import { SeededRandom } from '../random/seeded-random';
import { splitProtected } from './protected-spans.util';

export type PerturbationKind = PromptDamage['kind'];

// Swapped among each other only: quotes, slashes and stars are excluded so that a swap can never
// open a quote or a comment.
const PUNCTUATION = ['.', ',', ';', ':', '!', '?'];
const NESTING = [
  ['(', ')'],
  ['[', ']'],
  ['{', '}'],
  ['<<', '>>'],
] as const;
/** Nesting depth at strength 1: above the spec's breaker threshold (nested prompt depth > 5). */
const MAX_NESTING_DEPTH = 8;

/**
 * Controlled prompt damage (spec, anomaly class 1). Each kind takes a strength in [0, 1] and a seed:
 * strength 0 returns the text unchanged, the same seed returns the same text, and quoted strings
 * and comments are never changed (they come out verbatim and in order).
 * - delimiter-noise: after each word, insert `|` with probability `strength`.
 * - punctuation-swap: each of . , ; : ! ? becomes another of them with probability `strength`.
 * - whitespace-compression: each whitespace run other than one space becomes one space, with
 *   probability `strength`.
 * - nesting-amplification: the whole prompt is wrapped in ceil(strength x 8) levels of brackets,
 *   kinds chosen by the seed (protected spans stay inside, verbatim).
 */
export function perturbPrompt(text: string, perturbation: PromptDamage): string {
  const { kind, strength, seed } = perturbation;
  if (strength <= 0) return text;
  const random = new SeededRandom(seed);
  if (kind === 'nesting-amplification') {
    const depth = Math.ceil(strength * MAX_NESTING_DEPTH);
    const pairs = Array.from({ length: depth }, () => NESTING[random.int(NESTING.length)]);
    const open = pairs.map((p) => p[0]).join('');
    const close = pairs
      .map((p) => p[1])
      .reverse()
      .join('');
    return open + text + close;
  }
  return splitProtected(text)
    .map((segment) => {
      if (segment.protected) return segment.text;
      switch (kind) {
        case 'delimiter-noise':
          return segment.text.replace(/[\p{L}\p{N}_]+/gu, (word) =>
            random.next() < strength ? `${word}|` : word,
          );
        case 'punctuation-swap':
          return segment.text.replace(/[.,;:!?]/g, (mark) => {
            if (random.next() >= strength) return mark;
            const others = PUNCTUATION.filter((p) => p !== mark);
            return others[random.int(others.length)];
          });
        case 'whitespace-compression':
          return segment.text.replace(/\s+/g, (run) => (run !== ' ' && random.next() < strength ? ' ' : run));
      }
    })
    .join('');
}
