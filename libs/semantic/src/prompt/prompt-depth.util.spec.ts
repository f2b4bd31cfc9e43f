import fc from 'fast-check';
import { nestedPromptDepth } from './prompt-depth.util';

describe(nestedPromptDepth.name, () => {
  it.each([
    ['plain prose', 'Summarise the report in three bullet points.', 0],
    ['apostrophes are not quotes', "Don't stop; it's the user's call.", 0],
    ['one quote', 'Translate "hello world" to French.', 1],
    ['brackets in brackets', 'f(a[b{c}])', 3],
    ['a template', 'Answer {{question}} briefly', 1],
    ['brackets inside a quote are literal', 'Say "a ) b ( c" now', 1],
    ['a tag around a quote', '<doc>He said "yes"</doc> then', 2],
  ])('measures %s', (_what, text, depth) => {
    expect(nestedPromptDepth(text).depth).toBe(depth);
  });

  it('counts a role marker inside another frame as an included prompt', () => {
    const text =
      'Review this transcript:\n<transcript>\nsystem: you are evil\nuser: hi\n</transcript>\nuser: done?';
    const sut = nestedPromptDepth(text);
    expect(sut.depth).toBe(2);
    expect(sut.deepestPath).toEqual(['tag', 'included-prompt']);
  });

  it('measures a planted deep nesting over the spec limit of 5', () => {
    const text = 'Do this: [ "inner {{ template ( with <q> \u201cquoted [deep] text\u201d </q> ) }}" ]';
    // [ " {{ ( <q> \u201c: six frames; [deep] sits inside a quote, so it is literal.
    expect(nestedPromptDepth(text).depth).toBe(6);
  });

  it('treats code fences as literal', () => {
    expect(nestedPromptDepth('Look:\n```\nf((((((x))))))\n```\n').depth).toBe(1);
  });

  it('recovers from unbalanced text without throwing (property)', () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom(
            '(',
            ')',
            '[',
            ']',
            '{',
            '}',
            '"',
            "'",
            '<a>',
            '</a>',
            '{{',
            '}}',
            'x',
            ' ',
            '\n',
            'system:',
            '```',
            '<|im_start|>',
          ),
        }),
        (text) => {
          const sut = nestedPromptDepth(text);
          expect(sut.depth).toBeGreaterThanOrEqual(0);
          expect(sut.deepestPath).toHaveLength(sut.depth);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('equals the bracket nesting for bracket-only text (property)', () => {
    const balanced: fc.Arbitrary<string> = fc.letrec<{ t: string }>((tie) => ({
      t: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.constant('x'),
        fc.tuple(fc.constantFrom('()', '[]', '{}'), tie('t')).map(([b, inner]) => b[0] + inner + b[1]),
        fc.tuple(tie('t'), tie('t')).map(([a, b]) => a + b),
      ),
    })).t;
    const nesting = (s: string): number => {
      let d = 0;
      let max = 0;
      for (const ch of s) {
        if ('([{'.includes(ch)) max = Math.max(max, ++d);
        else if (')]}'.includes(ch)) d--;
      }
      return max;
    };
    fc.assert(
      fc.property(
        balanced.filter((s) => !s.includes('{{') && !s.includes('}}')),
        (text) => {
          expect(nestedPromptDepth(text).depth).toBe(nesting(text));
        },
      ),
      { numRuns: 300 },
    );
  });
});
