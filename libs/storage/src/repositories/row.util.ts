import { randomUUID } from 'node:crypto';
import { toJsonbText } from './jsonb-text.util';

/**
 * Conversions between repository values and SQL. Both drivers return `timestamptz` as a Date and
 * `jsonb` already parsed; pg returns `bigint`/`count(*)` as strings, so counts are cast to
 * integer in SQL.
 */

/** A `timestamptz` column as epoch milliseconds. */
export function epochMs(value: unknown): number {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'string' || typeof value === 'number') {
    const ms = new Date(value).getTime();
    if (!Number.isNaN(ms)) return ms;
  }
  throw new TypeError(`expected a timestamp, got ${String(value)}`);
}

export function epochMsOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : epochMs(value);
}

/** Epoch milliseconds as a `$n::timestamptz` parameter (ISO keeps the milliseconds exactly). */
export function timestampParam(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`timestamp must be finite epoch milliseconds, got ${ms}`);
  return new Date(ms).toISOString();
}

/**
 * A value as a `$n::jsonb` parameter. Serialised here because pg would turn a JS array into a
 * PostgreSQL array literal rather than JSON. Strings jsonb refuses (holding NUL) are escaped
 * (`jsonb-text.util.ts`); read such a column back through `fromJsonb`.
 */
export function jsonParam(value: unknown): string {
  const json = toJsonbText(value);
  if (json === undefined) throw new TypeError('value is not JSON-serialisable');
  return json;
}

/**
 * Prose (a reason, a message) as a `text` parameter: PostgreSQL's text cannot hold NUL at all, so
 * each becomes U+FFFD, the replacement character (a reason is read, not parsed).
 */
export function textParam(text: string | null | undefined): string | null {
  return text === null || text === undefined ? null : text.replace(/\u0000/g, '\uFFFD');
}

export function newId(): string {
  return randomUUID();
}

/** `$from, $from+1, ...` for `count` parameters. */
export function placeholders(from: number, count: number): string {
  return Array.from({ length: count }, (_, index) => `$${from + index}`).join(', ');
}
