/**
 * Counter arithmetic that survives restarts. A Prometheus counter only goes up; when a reading is
 * lower than the previous one the process restarted and counted again from zero, so the increase
 * since the previous reading is the current value (the PromQL `increase()` rule).
 */
export function counterDelta(previous: number, current: number): number {
  return current >= previous ? current - previous : current;
}

/** Per-second rate of any counter, per key, from successive readings. Not thread-shared. */
export class CounterRateTracker {
  private readonly last = new Map<string, { value: number; atMs: number }>();

  /**
   * Records a reading and returns the rate (units per second) since the previous one of the same
   * key; undefined for the first reading or when time did not move forward.
   */
  observe(key: string, value: number, atMs: number): number | undefined {
    const previous = this.last.get(key);
    if (previous && atMs <= previous.atMs) return undefined;
    this.last.set(key, { value, atMs });
    if (!previous) return undefined;
    return counterDelta(previous.value, value) / ((atMs - previous.atMs) / 1000);
  }

  forget(key: string): void {
    this.last.delete(key);
  }
}
