/**
 * PostgreSQL's jsonb refuses the NUL character (`\u0000`) in any string, key or value ("unsupported
 * Unicode escape sequence"), although it is valid JSON and a target may well send it. Such a
 * string is stored in a form jsonb accepts and read back equal:
 *
 * | string as sent                                   | as stored                                   |
 * |--------------------------------------------------|---------------------------------------------|
 * | holds no NUL and does not start with `NUL_MARKER`  | itself (the common case: no copy is made)   |
 * | otherwise                                        | `NUL_MARKER` + the string, `%` -> `%25`, NUL -> `%00` |
 *
 * A string that starts with the marker itself is escaped too, so decoding is never ambiguous.
 */
export const NUL_MARKER = '\uFDD0nul\uFDD0';

function needsEscape(text: string): boolean {
  return text.includes('\u0000') || text.startsWith(NUL_MARKER);
}

function escapeText(text: string): string {
  return needsEscape(text)
    ? NUL_MARKER + text.replace(/[%\u0000]/g, (c) => (c === '%' ? '%25' : '%00'))
    : text;
}

function unescapeText(text: string): string {
  if (!text.startsWith(NUL_MARKER)) return text;
  return text
    .slice(NUL_MARKER.length)
    .replace(/%(25|00)/g, (_, code: string) => (code === '25' ? '%' : '\u0000'));
}

/** `value` with every string (keys included) rewritten by `rewrite`; unchanged parts are shared. */
function mapStrings(value: unknown, rewrite: (text: string) => string): unknown {
  if (typeof value === 'string') return rewrite(value);
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const mapped = mapStrings(value[i], rewrite);
      if (mapped !== value[i]) (copy ??= value.slice())[i] = mapped;
    }
    return copy ?? value;
  }
  if (value !== null && typeof value === 'object') {
    let changed = false;
    const entries = Object.entries(value as Record<string, unknown>).map(([key, item]) => {
      const k = rewrite(key);
      const v = mapStrings(item, rewrite);
      if (k !== key || v !== item) changed = true;
      return [k, v] as const;
    });
    return changed ? Object.fromEntries(entries) : value;
  }
  return value;
}

/** JSON text of `value` that jsonb accepts. */
export function toJsonbText(value: unknown): string | undefined {
  const json = JSON.stringify(value);
  if (json === undefined || (!json.includes('\\u0000') && !json.includes(NUL_MARKER))) return json;
  // Re-parsing gives the plain JSON value (toJSON applied, undefined dropped) to escape.
  return JSON.stringify(mapStrings(JSON.parse(json), escapeText));
}

/** A jsonb column's value as it was before `toJsonbText`. */
export function fromJsonb<T>(value: T): T {
  return mapStrings(value, unescapeText) as T;
}
