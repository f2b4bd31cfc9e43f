/**
 * An LRU map whose entries live for one time window (spec: LRU keyed by fingerprint + time
 * window). Invariants:
 * - an entry is served only in the window it was stored in (window = floor(now / windowMs));
 *   the first access in a new window drops every entry, so a verdict is never older than one
 *   window and memory never holds dead windows;
 * - at most `capacity` entries; storing one more evicts the least recently used.
 */
export class WindowedLruCache<V> {
  private readonly entries = new Map<string, V>();
  private window: number;
  hits = 0;
  misses = 0;
  /** Entries dropped because their window ended. */
  expired = 0;

  constructor(
    private readonly capacity: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!(capacity >= 1) || !(windowMs > 0))
      throw new Error(`WindowedLruCache: capacity (${capacity}) must be >= 1 and windowMs (${windowMs}) > 0`);
    this.window = this.currentWindow();
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    this.roll();
    const hit = this.entries.get(key);
    if (hit === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.entries.delete(key);
    this.entries.set(key, hit); // most recently used goes last
    return hit;
  }

  set(key: string, value: V): void {
    this.roll();
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }

  private currentWindow(): number {
    return Math.floor(this.now() / this.windowMs);
  }

  private roll(): void {
    const window = this.currentWindow();
    if (window === this.window) return;
    this.expired += this.entries.size;
    this.entries.clear();
    this.window = window;
  }
}
