import { RE2JS } from 're2js';
import type { RedactionRules } from '@fathom/contracts';

/**
 * A built-in rule: the RE2 pattern (linear time whatever the text) and `mayMatch`, a condition
 * every text it matches meets (a character or a short run it cannot match without), checked
 * first with V8's own engine: most strings of a request (keys, roles, model names, prose) meet
 * none, and re2js, an interpreter, costs microseconds per pattern even on a short string.
 * `mayMatch` patterns are plain literals or bounded classes, so they cannot backtrack far.
 */
export interface BuiltInRule {
  readonly pattern: RE2JS;
  readonly mayMatch: RegExp;
  readonly replacement: string;
}

const rule = (source: string, mayMatch: RegExp, replacement: string): BuiltInRule => ({
  pattern: RE2JS.compile(source),
  mayMatch,
  replacement,
});

const EMAIL = rule(
  '[\\p{L}\\p{N}._%+\\-]+@[\\p{L}\\p{N}\\-]+(?:\\.[\\p{L}\\p{N}\\-]+)*\\.\\p{L}{2,}',
  /@/,
  '[EMAIL]',
);
const key = (source: string, mayMatch: RegExp) => rule(source, mayMatch, '[KEY]');
const KEYS = [
  // JWT: header.payload.signature, base64url, the header always starts with {" = eyJ.
  key('eyJ[A-Za-z0-9_\\-]+\\.[A-Za-z0-9_\\-]+\\.[A-Za-z0-9_\\-]*', /eyJ/),
  // AWS access key ids (AKIA long-term, ASIA temporary, ...).
  key(
    '\\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}\\b',
    /A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA|SCA)/,
  ),
  // Passwords and secrets written out: the value after the word. RE2's (?i) folds as Unicode's
  // simple case folding, as V8's `iu` does (so "paſſword" is caught by both).
  key(
    '(?i)\\b(?:password|passwd|pwd|passphrase|secret|mot de passe|contraseña|passwort|senha)\\s*(?:is|:|=)\\s*\\S+',
    /pass|pwd|secret|contraseña|senha/iu,
  ),
  key('\\b(?:sk|pk|rk|api|key)[\\-_][A-Za-z0-9_\\-]{8,}\\b', /(?:sk|pk|rk|api|key)[-_]/),
  key('(?i)\\bBearer\\s+[A-Za-z0-9._~+/=\\-]{8,}', /bearer/iu),
  key('\\b[A-Fa-f0-9]{32,}\\b', /[A-Fa-f0-9]{32}/),
  // AWS secret access keys (40 base64 characters) and other long base64/base64url runs.
  key('[A-Za-z0-9/+_\\-]{40,}={0,2}', /[A-Za-z0-9/+_-]{40}/),
];
/** Phone numbers in any grouping, then any remaining run of 3+ digits. */
const PHONE = rule(
  [
    '\\+\\d{1,3}(?:[ .\\-]?\\(?\\d{1,4}\\)?){2,5}', // international: +44 20 7946 0958
    '\\(\\d{2,4}\\)[ .\\-]?\\d{2,4}(?:[ .\\-]\\d{2,5}){0,3}', // (555) 123-4567
    '\\d{2,4}(?:[ .\\-]\\d{2,5}){2,4}', // 555.123.4567; a plain digit run is a [NUMBER]
  ].join('|'),
  /\d/, // "+1 2 3" is one: no two digits need be adjacent
  '[PHONE]',
);
const NUMBERS = rule('\\d{3,}', /\d{3}/, '[NUMBER]');
/** Every built-in rule, for the property test of `mayMatch`. */
export const BUILT_IN_RULES: readonly BuiltInRule[] = [EMAIL, ...KEYS, PHONE, NUMBERS];

/** Request fields whose numbers are settings, not data: kept so the targets get the same request. */
const SETTING_KEYS = new Set([
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'top_k',
  'n',
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'logprobs',
  'top_logprobs',
  'index',
]);
const CREDENTIAL_KEY =
  /pass(word|wd|phrase)?$|secret|(^|[-_])token$|api[-_]?key|authorization|credential|^pwd$/i;

export interface Redactor {
  readonly rules: RedactionRules;
  (text: string): string;
}

export function compileRedactor(rules: RedactionRules): Redactor {
  // A caller's pattern has no `mayMatch`: it always runs.
  const steps: Array<{ pattern: RE2JS; mayMatch: RegExp | null; replacement: string }> = [];
  if (rules.emails) steps.push(EMAIL);
  if (rules.keys) steps.push(...KEYS);
  if (rules.numbers) steps.push(PHONE, NUMBERS);
  for (const p of rules.patterns)
    steps.push({ pattern: RE2JS.compile(p.regex), mayMatch: null, replacement: p.replacement });
  const redact = (text: string) => {
    let out = text;
    for (const { pattern, mayMatch, replacement } of steps)
      if (mayMatch === null || mayMatch.test(out)) out = pattern.matcher(out).replaceAll(replacement);
    return out;
  };
  return Object.assign(redact, { rules });
}

/**
 * Applies `redact` to every string inside a JSON value, object keys included; with `keys`, the
 * value of a field named like a credential becomes `[REDACTED]` whatever it is; with `numbers`,
 * JSON numbers of 3 or more digits become `[NUMBER]` (but not sampling settings).
 */
export function redactDeep<T>(value: T, redact: Redactor, key: string | null = null): T {
  const { rules } = redact;
  const setting = key !== null && SETTING_KEYS.has(key);
  if (
    !setting &&
    key !== null &&
    rules.keys &&
    CREDENTIAL_KEY.test(key) &&
    value !== null &&
    typeof value !== 'object'
  )
    return '[REDACTED]' as T;
  if (typeof value === 'string') return redact(value) as T;
  if (typeof value === 'number') {
    return (rules.numbers && !setting && /\d{3,}/.test(String(Math.abs(value))) ? '[NUMBER]' : value) as T;
  }
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact, null)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      let name = redact(k);
      for (let i = 2; name in out; i++) name = `${redact(k)}#${i}`;
      out[name] = redactDeep(v, redact, k);
    }
    return out as T;
  }
  return value;
}
