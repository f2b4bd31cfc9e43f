/** What a redacted value reads as. */
export const REDACTED = '[redacted]';

/** Keys whose values are credentials wherever they appear in a campaign spec. */
const SECRET_KEY = /(api[-_]?key|token|secret|password|passwd|authorization|cookie|credential)/i;

/**
 * A copy of a campaign spec fit to print in a report: values under credential-like keys
 * (`apiKey`, `token`, `password`, ...) and every header value (`headers` maps carry
 * `Authorization` and vendor keys under any name) read `[redacted]`, and a URL's user info is
 * dropped. Everything else is kept, so the reader sees what ran.
 */
export function redactSpec(value: unknown, key = ''): unknown {
  if (typeof value === 'string') return SECRET_KEY.test(key) ? REDACTED : stripUserInfo(value);
  if (Array.isArray(value)) return value.map((v) => redactSpec(v, key));
  if (value === null || typeof value !== 'object')
    return SECRET_KEY.test(key) && value !== null && value !== undefined ? REDACTED : value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k === 'headers' && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      out[k] = Object.fromEntries(Object.keys(v).map((h) => [h, REDACTED]));
    } else out[k] = redactSpec(v, k);
  }
  return out;
}

function stripUserInfo(text: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(text)) return text;
  try {
    const url = new URL(text);
    if (!url.username && !url.password) return text;
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return text.replace(/\/\/[^/@]*@/, '//');
  }
}
