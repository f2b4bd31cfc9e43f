/**
 * Reading helpers shared by the adapters: what counts as "missing" in each source.
 */

/**
 * DCGM's blank ("no value") sentinels, from dcgm_structs.h: DCGM_INT32_BLANK 0x7ffffff0,
 * DCGM_INT64_BLANK 0x7ffffffffffffff0, DCGM_FP64_BLANK 140737488355328.0 (2^47), each followed by
 * NOT_FOUND (+1), NOT_SUPPORTED (+2), NOT_PERMISSIONED (+3) and a few more codes. dcgm-exporter
 * prints them as numbers (e.g. 9223372036854775794, which a double rounds to 2^63).
 */
const DCGM_INT32_BLANK = 0x7ffffff0;
const DCGM_FP64_BLANK = 140737488355328;
const DCGM_INT64_BLANK_AS_DOUBLE = 9.2233720368547e18;
const SENTINEL_SPAN = 16;

export function isDcgmSentinel(value: number): boolean {
  if (!Number.isFinite(value)) return true;
  if (value >= DCGM_INT64_BLANK_AS_DOUBLE) return true;
  if (value >= DCGM_FP64_BLANK && value <= DCGM_FP64_BLANK + SENTINEL_SPAN) return true;
  return value >= DCGM_INT32_BLANK && value <= DCGM_INT32_BLANK + SENTINEL_SPAN;
}

export interface Reading {
  readonly value: number;
  /** Unit printed after the number (`MiB`, `W`, `%`, `MHz`, `C`), if any. */
  readonly unit?: string;
}

/**
 * Parses an nvidia-smi value (`19818 MiB`, `631.95 W`, `100 %`, `59`, `0x...` not numeric).
 * Returns undefined for every "no value" form: `[N/A]`, `N/A`, `[Not Supported]`,
 * `[Requested functionality has been deprecated]`, `[Unknown Error]`, `[Insufficient
 * Permissions]`, `[GPU requires reset]`, `-`, empty, and any other text that is not a number.
 */
export function parseReading(raw: string | number | undefined | null): Reading | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'number') return Number.isFinite(raw) ? { value: raw } : undefined;
  const text = raw.trim();
  if (text === '' || text.startsWith('[') || /^n\/?a$/i.test(text)) return undefined;
  const match = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z%/]+)?$/.exec(text);
  if (!match) return undefined;
  const value = Number(match[1]);
  if (!Number.isFinite(value)) return undefined;
  return match[2] ? { value, unit: match[2] } : { value };
}

const MIB_PER: Readonly<Record<string, number>> = {
  B: 1 / (1024 * 1024),
  KiB: 1 / 1024,
  KB: 1 / 1024,
  MiB: 1,
  MB: 1,
  GiB: 1024,
  GB: 1024,
};

/** Converts a memory reading to MiB; nvidia-smi prints MiB, but be safe. Undefined for unknown units. */
export function toMiB(reading: Reading | undefined, defaultUnit = 'MiB'): number | undefined {
  if (!reading) return undefined;
  const factor = MIB_PER[reading.unit ?? defaultUnit];
  return factor === undefined ? undefined : reading.value * factor;
}

/**
 * A DCGM profiling field is a 0..1 ratio. The `-o` 1.x-compat CSV labels some "(in %)"; values
 * in (1, 100] are taken as percent and scaled, anything else out of range is dropped.
 */
export function toRatio(value: number): number | undefined {
  if (value < 0) return undefined;
  if (value <= 1.0001) return Math.min(value, 1);
  if (value <= 100) return value / 100;
  return undefined;
}
