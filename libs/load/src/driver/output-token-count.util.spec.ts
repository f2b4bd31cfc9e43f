import { countTokens } from 'gpt-tokenizer';
import { countOutputTokens } from './output-token-count.util';

describe(countOutputTokens.name, () => {
  it('gives gpt-tokenizer count, for a first and a repeated completion alike', () => {
    const texts = [
      '',
      'hello there',
      'The quick brown fox jumps over the lazy dog. '.repeat(3),
      'x'.repeat(9000),
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
});
