/**
 * The least and the greatest of a run's figures, in a loop. `Math.min(...values)` passes every
 * value as an argument, and V8 throws RangeError ("Maximum call stack size exceeded") past
 * ~125,000 of them: a 24 h run of two shards has 172,800 telemetry windows. As `Math.min` and
 * `Math.max`: `empty` for no value (Infinity / -Infinity), NaN when any value is NaN.
 */
export function minOf(values: Iterable<number>, empty = Number.POSITIVE_INFINITY): number {
  let least: number | null = null;
  for (const v of values) least = least === null ? v : Math.min(least, v);
  return least ?? empty;
}

export function maxOf(values: Iterable<number>, empty = Number.NEGATIVE_INFINITY): number {
  let greatest: number | null = null;
  for (const v of values) greatest = greatest === null ? v : Math.max(greatest, v);
  return greatest ?? empty;
}
