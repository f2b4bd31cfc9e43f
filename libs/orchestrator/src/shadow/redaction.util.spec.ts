import fc from 'fast-check';
import { RedactionRulesSchema } from '@fathom/contracts';
import { BUILT_IN_RULES, compileRedactor, redactDeep } from './redaction.util';

const all = compileRedactor(RedactionRulesSchema.parse({}));

describe(compileRedactor.name, () => {
  it.each([
    ['an AWS access key id', 'my key is AKIAIOSFODNN7EXAMPLE ok', 'AKIAIOSFODNN7EXAMPLE'],
    [
      'an AWS secret access key',
      'aws_secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY end',
      'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    ],
    ['a non-ASCII email', 'write to josé.müller@exämple.de please', 'josé.müller@exämple.de'],
    ['an email with a Cyrillic domain', 'пишите иван@пример.рф', 'иван@пример.рф'],
    ['a password phrase', 'my password: hunter2 thanks', 'hunter2'],
    ['a password in another language', 'contraseña = Tr0ub4dor&3', 'Tr0ub4dor&3'],
    ['a password spelt with long s (RE2 folds case as Unicode does)', 'my pa\u017f\u017fword: hunter2', 'hunter2'],
    [
      'a JWT',
      'token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl here',
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl',
    ],
    ['a phone number with a country code and spaces', 'call +44 20 7946 0958 now', '20 7946'],
    ['a phone number with parentheses', 'call (555) 123-4567', '555'],
    ['a phone number with dots', 'call 555.123.4567', '4567'],
    ['a bearer token', 'Authorization: Bearer abcdefgh12345678', 'abcdefgh12345678'],
  ])('removes %s', (_what, text, secret) => {
    expect(all(text)).not.toContain(secret);
  });

  it.each([
    ['call +44 20 7946 0958 now', 'call [PHONE] now'],
    ['call (555) 123-4567', 'call [PHONE]'],
    ['call 555.123.4567.', 'call [PHONE].'],
    ['ring +1-202-555-0173 today', 'ring [PHONE] today'],
  ])('replaces the whole phone number in %j', (text, expected) => {
    expect(all(text)).toBe(expected);
  });

  it('keeps the tokens of each kind apart', () => {
    expect(
      all(
        'Summarise the ticket from jane.doe@example.com, key sk-live_4f9a8b7c6d5e4f3a, card 4111111111111111.',
      ),
    ).toBe('Summarise the ticket from [EMAIL], key [KEY], card [NUMBER].');
  });

  it('keeps ordinary text', () => {
    expect(all('Explain how a KV cache speeds up decoding in 2 sentences.')).toBe(
      'Explain how a KV cache speeds up decoding in 2 sentences.',
    );
  });

  it("runs a caller's catastrophic pattern in linear time", () => {
    const sut = compileRedactor(RedactionRulesSchema.parse({ patterns: [{ regex: '(a+)+$' }] }));
    const started = performance.now();
    sut(`${'a'.repeat(50_000)}b`);
    // Backtracking engines take exponential time here (V8: minutes at 30 characters).
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(sut('xaaa')).toBe('x[REDACTED]');
  });

  // Pieces of what the rules look for, so that random texts come near to and into matches.
  const piece = fc.constantFrom(
    ...'aAeEkKsSyJIPpWwdDoOrRtTnNcCbBfF0123456789 +-_.()@:=/\u017f\u212añÑ'.split(''),
    ...['pass', 'PaSSwoRD', 'pa\u017f\u017fword', 'pwd', 'secret', 'contraseña', 'CONTRASEÑA', 'senha'],
    ...['eyJ', 'AKIA', 'ASCA', 'sk-', 'key_', 'api-', 'Bearer ', 'bEaReR', 'deadbeef'.repeat(4), 'x@y.fr'],
  );
  // Digit groups: "+1 2 3" is a phone number with no two digits side by side.
  const phoneish = fc
    .tuple(
      fc.constantFrom('+', '(', ''),
      fc.array(fc.tuple(fc.oneof(fc.nat(9), fc.nat(9999)), fc.constantFrom(' ', '.', '-', ') ', '')), {
        minLength: 1,
        maxLength: 5,
      }),
    )
    .map(([lead, groups]) => lead + groups.map(([digits, separator]) => `${digits}${separator}`).join(''));
  const text = fc.oneof(
    fc.array(piece, { maxLength: 24 }).map((parts) => parts.join('')),
    phoneish,
    fc.string({ unit: 'grapheme', maxLength: 60 }),
  );

  it('skips a rule only where it cannot match: every text a rule matches meets its pre-check', () => {
    fc.assert(
      fc.property(text, (sample) => {
        for (const { pattern, mayMatch } of BUILT_IN_RULES)
          if (pattern.matcher(sample).find())
            expect({ sample, mayMatch: mayMatch.test(sample) }).toEqual({ sample, mayMatch: true });
      }),
      { numRuns: 3000 },
    );
  });

  it('redacts as the rules without pre-checks do', () => {
    const unchecked = compileRedactor(
      RedactionRulesSchema.parse({
        emails: false,
        keys: false,
        numbers: false,
        patterns: BUILT_IN_RULES.map(({ pattern, replacement }) => ({
          regex: pattern.pattern(),
          replacement,
        })),
      }),
    );
    fc.assert(
      fc.property(text, (sample) => expect(all(sample)).toBe(unchecked(sample))),
      { numRuns: 3000 },
    );
  });

  it('refuses a pattern RE2 cannot run, naming it', () => {
    const parsed = RedactionRulesSchema.safeParse({ patterns: [{ regex: '(\\w)\\1' }] });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain('RE2');
  });
});

describe(redactDeep.name, () => {
  it('redacts JSON numbers, object keys and credential fields, and keeps sampling settings', () => {
    const body = {
      model: 'm',
      max_tokens: 256,
      temperature: 0.7,
      messages: [{ role: 'user', content: 'card 4111111111111111' }],
      metadata: { account: 123456789, 'alice@example.com': 'owner', password: 'hunter2', api_key: 42 },
    };
    const sut = redactDeep(body, all);
    const text = JSON.stringify(sut);
    for (const secret of ['4111111111111111', '123456789', 'alice@example.com', 'hunter2', '42'])
      expect(text).not.toContain(secret);
    expect(sut.max_tokens).toBe(256);
    expect(sut.temperature).toBe(0.7);
    expect(Object.keys(sut.metadata)).toContain('[EMAIL]');
  });
});
