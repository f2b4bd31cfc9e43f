/**
 * Cuts long synchronous work into macrotasks: callers do a unit of work, then `if (clock.due())
 * await clock.yield()`. `yield` lets every other task of the event loop run (timers, socket
 * reads: in the embedded runtime, the load-generator's token timestamps) via `setImmediate`.
 * One clock is shared by all the work of a service, so back-to-back messages (a backlog) count
 * against the same slice; after idleness the first check is due at once.
 */
export class TimeSliceClock {
  private sliceStartedAt = -Infinity;
  /** Yields taken so far. */
  yields = 0;

  /** @param budgetMs most synchronous work per macrotask, ms. */
  constructor(
    readonly budgetMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  due(): boolean {
    return this.now() - this.sliceStartedAt >= this.budgetMs;
  }

  async yield(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.yields++;
    this.sliceStartedAt = this.now();
  }
}
