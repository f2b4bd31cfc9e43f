/**
 * At most `size` shards run at once in one load-generator; the others wait in arrival order.
 * 200 quick runs started together otherwise started 200 engine threads on a 2-core host, and
 * the overload timed out their own probes ("target unreachable" for 180 of 200).
 */
export class ShardSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1)
      throw new Error(`shard slots: ${size} is not a positive integer`);
  }

  get queued(): number {
    return this.waiting.length;
  }

  get active(): number {
    return this.running;
  }

  /** Resolves when a slot is free; call the returned release exactly once when the shard ends. */
  async acquire(): Promise<() => void> {
    if (this.running < this.size) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    };
  }
}
