import { type RedactionRules } from '@fathom/contracts';

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g;
const KEYS =
  /\b(?:sk|pk|rk|api|key)[-_][A-Za-z0-9_-]{8,}\b|\bBearer\s+[A-Za-z0-9._~+/=-]{8,}|\b[A-Fa-f0-9]{32,}\b|\b[A-Za-z0-9_-]{40,}\b/g;
const NUMBERS = /\d{3,}/g;

export function compileRedactor(rules: RedactionRules): (text: string) => string {
  const steps: Array<[RegExp, string]> = [];
  if (rules.emails) steps.push([EMAIL, '[EMAIL]']);
  if (rules.keys) steps.push([KEYS, '[KEY]']);
  if (rules.numbers) steps.push([NUMBERS, '[NUMBER]']);
  for (const p of rules.patterns) steps.push([new RegExp(p.regex, 'g'), p.replacement]);
  return (text) => steps.reduce((out, [pattern, replacement]) => out.replace(pattern, replacement), text);
}

/** Applies `redact` to every string inside a JSON value (keys are kept). */
export function redactDeep<T>(value: T, redact: (text: string) => string): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, redact)])) as T;
  }
  return value;
}
