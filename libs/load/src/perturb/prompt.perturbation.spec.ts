import fc from 'fast-check';
import type { PromptDamage } from '@fathom/contracts';
import { perturbPrompt } from './prompt.perturbation';
import { splitProtected } from './protected-spans.util';

const KINDS: PromptDamage['kind'][] = [
  'delimiter-noise',
  'punctuation-swap',
  'whitespace-compression',
  'nesting-amplification',
];

// Prompts built from prose, punctuation, whitespace, quotes and comments, so protected spans occur often.
const promptArb = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        'word',
        'tokens',
        'x1',
        "don't",
        '.',
        ',',
        ';',
        '!',
        '?',
        ':',
        ' ',
        '  ',
        '\n',
        '\t',
        '|',
        '(',
        '/',
      ),
      fc.string({ maxLength: 12 }).map((s) => `"${s.replace(/"/g, '')}"`),
      fc.string({ maxLength: 12 }).map((s) => `'${s.replace(/'/g, '')}'`),
      fc.string({ maxLength: 12 }).map((s) => `// ${s.replace(/\n/g, '')}\n`),
      fc.string({ maxLength: 12 }).map((s) => `/* ${s.replace(/\*\//g, '')} */`),
      fc.string({ maxLength: 6 }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));
const perturbationArb = fc.record({
  kind: fc.constantFrom(...KINDS),
  strength: fc.double({ min: 0, max: 1, noNaN: true }),
  seed: fc.integer(),
});

/** True when each protected span of `input` occurs in `output` verbatim and in the same order. */
function protectedSpansKept(input: string, output: string): boolean {
  let from = 0;
  for (const segment of splitProtected(input).filter((s) => s.protected)) {
    const at = output.indexOf(segment.text, from);
    if (at === -1) return false;
    from = at + segment.text.length;
  }
  return true;
}

describe(perturbPrompt.name, () => {
  it('never changes quoted strings or comments', () => {
    fc.assert(
      fc.property(promptArb, perturbationArb, (prompt, p) =>
        protectedSpansKept(prompt, perturbPrompt(prompt, p)),
      ),
      {
        numRuns: 500,
      },
    );
  });

  it('gives the same output for the same seed', () => {
    fc.assert(
      fc.property(
        promptArb,
        perturbationArb,
        (prompt, p) => perturbPrompt(prompt, p) === perturbPrompt(prompt, { ...p }),
      ),
    );
  });

  it('is the identity at strength 0', () => {
    fc.assert(
      fc.property(
        promptArb,
        perturbationArb,
        (prompt, p) => perturbPrompt(prompt, { ...p, strength: 0 }) === prompt,
      ),
    );
  });

  it('damages free text at strength 1 and leaves the quoted part alone', () => {
    const sut = 'Summarise this, then stop. "keep, this. exact" // and this, too.';
    const noisy = perturbPrompt(sut, { kind: 'delimiter-noise', strength: 1, seed: 3 });
    expect(noisy).toBe('Summarise| this|, then| stop|. "keep, this. exact" // and this, too.');
    const swapped = perturbPrompt(sut, { kind: 'punctuation-swap', strength: 1, seed: 3 });
    expect(swapped.slice(0, 26)).not.toBe(sut.slice(0, 26));
    expect(swapped.endsWith('"keep, this. exact" // and this, too.')).toBe(true);
    const nested = perturbPrompt(sut, { kind: 'nesting-amplification', strength: 1, seed: 3 });
    expect(nested.length).toBeGreaterThan(sut.length + 15);
    expect(nested).toContain(sut);
    expect(perturbPrompt('a \n\n b', { kind: 'whitespace-compression', strength: 1, seed: 1 })).toBe('a b');
  });

  it('differs between seeds at partial strength', () => {
    const sut = Array.from({ length: 50 }, (_, i) => `w${i}`).join(' ');
    const a = perturbPrompt(sut, { kind: 'delimiter-noise', strength: 0.5, seed: 1 });
    const b = perturbPrompt(sut, { kind: 'delimiter-noise', strength: 0.5, seed: 2 });
    expect(a).not.toBe(b);
  });
});
