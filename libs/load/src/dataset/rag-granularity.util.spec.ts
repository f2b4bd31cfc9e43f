import fc from 'fast-check';
import { splitToGranularity } from './rag-granularity.util';

const TEXT = 'Invoices are due in March. Refunds take 5 days!\n\nShipping to Norway is slow?  Yes.\n\n\n';

describe(splitToGranularity.name, () => {
  it('cuts texts into paragraphs, sentences or tokens, in order', () => {
    expect(splitToGranularity([TEXT], 'paragraph')).toEqual([
      'Invoices are due in March. Refunds take 5 days!',
      'Shipping to Norway is slow? Yes.',
    ]);
    expect(splitToGranularity([TEXT, 'GPU limits'], 'sentence')).toEqual([
      'Invoices are due in March.',
      'Refunds take 5 days!',
      'Shipping to Norway is slow?',
      'Yes.',
      'GPU limits',
    ]);
    expect(splitToGranularity([TEXT], 'token')).toHaveLength(15);
  });

  it('gives more, smaller pieces at each finer granularity and loses no word (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.lorem({ mode: 'sentences', maxCount: 5 }), { maxLength: 5 }), (texts) => {
        const [p, s, t] = (['paragraph', 'sentence', 'token'] as const).map((g) =>
          splitToGranularity(texts, g),
        );
        expect(p.length).toBeLessThanOrEqual(s.length);
        expect(s.length).toBeLessThanOrEqual(t.length);
        const words = (pieces: string[]) => pieces.join(' ').split(' ').filter(Boolean);
        expect(words(p)).toEqual(words(s));
        expect(words(s)).toEqual(t);
      }),
    );
  });
});
