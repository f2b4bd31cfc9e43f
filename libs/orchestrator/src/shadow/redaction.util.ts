import { RE2JS } from 're2js';
import type { RedactionRules } from '@fathom/contracts';

const EMAIL = RE2JS.compile(
  '[\\p{L}\\p{N}._%+\\-]+@[\\p{L}\\p{N}\\-]+(?:\\.[\\p{L}\\p{N}\\-]+)*\\.\\p{L}{2,}',
);
const KEYS = [
  // JWT: header.payload.signature, base64url, the header always starts with {" = eyJ.
  'eyJ[A-Za-z0-9_\\-]+\\.[A-Za-z0-9_\\-]+\\.[A-Za-z0-9_\\-]*',
  // AWS access key ids (AKIA long-term, ASIA temporary, ...).
  '\\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}\\b',
  // Passwords and secrets written out: the value after the word.
  '(?i)\\b(?:password|passwd|pwd|passphrase|secret|mot de passe|contraseña|passwort|senha)\\s*(?:is|:|=)\\s*\\S+',
  '\\b(?:sk|pk|rk|api|key)[\\-_][A-Za-z0-9_\\-]{8,}\\b',
  '(?i)\\bBearer\\s+[A-Za-z0-9._~+/=\\-]{8,}',
  '\\b[A-Fa-f0-9]{32,}\\b',
  // AWS secret access keys (40 base64 characters) and other long base64/base64url runs.
  '[A-Za-z0-9/+_\\-]{40,}={0,2}',
].map((source) => RE2JS.compile(source));
/** Phone numbers in any grouping, then any remaining run of 3+ digits. */
const PHONE = RE2JS.compile(
  [
    '\\+\\d{1,3}(?:[ .\\-]?\\(?\\d{1,4}\\)?){2,5}', // international: +44 20 7946 0958
    '\\(\\d{2,4}\\)[ .\\-]?\\d{2,4}(?:[ .\\-]\\d{2,5}){0,3}', // (555) 123-4567
    '\\d{2,4}(?:[ .\\-]\\d{2,5}){2,4}', // 555.123.4567; a plain digit run is a [NUMBER]
  ].join('|'),
);
const NUMBERS = RE2JS.compile('\\d{3,}');

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
  const steps: Array<[RE2JS, string]> = [];
  if (rules.emails) steps.push([EMAIL, '[EMAIL]']);
  if (rules.keys) for (const pattern of KEYS) steps.push([pattern, '[KEY]']);
  if (rules.numbers) steps.push([PHONE, '[PHONE]'], [NUMBERS, '[NUMBER]']);
  for (const p of rules.patterns) steps.push([RE2JS.compile(p.regex), p.replacement]);
  const redact = (text: string) =>
    steps.reduce((out, [pattern, replacement]) => pattern.matcher(out).replaceAll(replacement), text);
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
