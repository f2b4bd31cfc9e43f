import { countTokens } from 'gpt-tokenizer';
import { countOutputTokens } from './output-token-count.util';

describe(countOutputTokens.name, () => {
  it('gives gpt-tokenizer count, for a first and a repeated completion alike', () => {
    const texts = [
      '',
      'hello there',
      'The quick brown fox jumps over the lazy dog. '.repeat(3),
      'The quick brown fox jumps over the lazy dog. '.repeat(200),
    ];
    for (const text of texts) {
      const expected = text === '' ? 0 : countTokens(text);
      expect(countOutputTokens(text)).toBe(expected);
      expect(countOutputTokens(text)).toBe(expected);
    }
  });

  it('stays right after the memo fills and starts afresh', () => {
    for (let i = 0; i < 600; i++) countOutputTokens(`completion number ${i} of many`);
    for (let i = 0; i < 600; i += 37) {
      const text = `completion number ${i} of many`;
      expect(countOutputTokens(text)).toBe(countTokens(text));
    }
  });

  it('counts a run without a break in bounded time, in pieces, and scales past a million characters', () => {
    // Before, BPE over one 200k-character "word" ran for minutes (quadratic in the run).
    for (const text of ['x'.repeat(200_000), ' '.repeat(200_000), `a ${'!'.repeat(100_000)} b`]) {
      const started = performance.now();
      const count = countOutputTokens(text);
      expect(performance.now() - started).toBeLessThan(5000);
      expect(count).toBeGreaterThan(0);
      expect(count).toBeLessThanOrEqual(text.length);
    }
    const huge = 'word '.repeat(400_000); // 2M characters, 400k tokens
    const first = huge.slice(0, 1 << 20);
    expect(countOutputTokens(huge)).toBe(Math.round((countTokens(first) * huge.length) / first.length));
    expect(countOutputTokens(huge)).toBeGreaterThan(390_000);
    expect(countOutputTokens(huge)).toBeLessThan(410_000);
  });
});
