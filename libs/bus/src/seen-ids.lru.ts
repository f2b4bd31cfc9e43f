/**
 * A bounded set of recently handled event ids (least recently seen evicted first), for
 * idempotent consumers: a redelivered event whose id is still here is not handled again.
 * Bounded by count and by age: a redelivery comes seconds after the first delivery (a retry, a
 * rebalance, a broker that restarted), so ids older than `maxAgeMs` are dropped. With the count
 * alone, a group that sees a few events a second took hours to reach its bound and grew all that
 * time. A duplicate older than either bound gets through, which at-least-once consumers must
 * tolerate anyway.
 */
export class SeenIds {
  // A Map iterates in insertion order: re-inserting on touch makes the first key the least
  // recently seen, and its value (the second it was seen) the oldest.
  private readonly ids = new Map<string, number>();

  constructor(
    readonly capacity = 100_000,
    readonly maxAgeMs = 10 * 60_000,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    if (!(maxAgeMs > 0)) throw new RangeError(`maxAgeMs must be positive, got ${maxAgeMs}`);
  }

  get size(): number {
    return this.ids.size;
  }

  /** True when `id` was added, not yet evicted and not older than `maxAgeMs`; refreshes it. */
  has(id: string): boolean {
    const seenAt = this.ids.get(id);
    if (seenAt === undefined) return false;
    this.ids.delete(id);
    const now = this.second();
    if (seenAt < now - this.maxAgeS()) return false;
    this.ids.set(id, now);
    return true;
  }

  add(id: string): void {
    this.ids.delete(id);
    const now = this.second();
    this.ids.set(id, now);
    const oldest = now - this.maxAgeS();
    for (const [first, seenAt] of this.ids) {
      if (this.ids.size <= this.capacity && seenAt >= oldest) break;
      this.ids.delete(first);
    }
  }

  /** Whole seconds (small integers: no boxed number per entry). */
  private second(): number {
    return Math.floor(this.nowMs() / 1000);
  }

  private maxAgeS(): number {
    return Math.ceil(this.maxAgeMs / 1000);
  }
}
