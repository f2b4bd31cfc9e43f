import fc from 'fast-check';
import { NUL_MARKER, fromJsonb, toJsonbText } from './jsonb-text.util';

describe('jsonb text', () => {
  it('leaves JSON without NUL as JSON.stringify writes it', () => {
    const value = { a: 'text %00', b: [1, 'two', null], c: { d: true } };
    expect(toJsonbText(value)).toBe(JSON.stringify(value));
  });

  it('writes no NUL escape, and reads back the value sent, keys included', () => {
    const value = { ['k\u0000ey']: ['a\u0000b', `${NUL_MARKER}x`, '%00\u0000%'], n: 1 };
    const stored = toJsonbText(value)!;
    expect(stored).not.toContain('\\u0000');
    expect(fromJsonb(JSON.parse(stored))).toEqual(value);
  });

  it('round-trips any JSON value (10,000 cases)', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.constantFrom('\u0000', NUL_MARKER, `${NUL_MARKER}%00`, '%25\u0000'),
    );
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        text,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(text, tie('value'), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, (value) => {
        const stored = toJsonbText(value)!;
        expect(stored).not.toContain('\\u0000');
        expect(fromJsonb(JSON.parse(stored))).toEqual(value);
      }),
      { numRuns: 10_000, seed: 14 },
    );
  });
});
