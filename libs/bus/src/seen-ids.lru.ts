/**
 * A bounded set of recently handled event ids (least recently seen evicted first), for
 * idempotent consumers: a redelivered event whose id is still here is not handled again.
 * The bound keeps memory flat on long runs; a duplicate older than `capacity` ids gets through,
 * which at-least-once consumers must tolerate anyway.
 */
export class SeenIds {
  // A Map iterates in insertion order: re-inserting on touch makes the first key the oldest.
  private readonly ids = new Map<string, true>();

  constructor(readonly capacity = 100_000) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
  }

  get size(): number {
    return this.ids.size;
  }

  /** True when `id` was added and not yet evicted; refreshes its recency. */
  has(id: string): boolean {
    if (!this.ids.has(id)) return false;
    this.ids.delete(id);
    this.ids.set(id, true);
    return true;
  }

  add(id: string): void {
    this.ids.delete(id);
    this.ids.set(id, true);
    if (this.ids.size > this.capacity) {
      const oldest = this.ids.keys().next().value as string;
      this.ids.delete(oldest);
    }
  }
}
