/**
 * A step's own concurrency limit across the shard's iterations: at most `limit` holders at once,
 * waiters served in arrival order. A waiter whose signal aborts leaves the queue (never holds).
 */
export class StepSlots {
  private held = 0;
  private readonly waiters: { grant: () => void }[] = [];

  constructor(readonly limit: number) {}

  /** Resolves with the release once a slot is free; rejects with the signal's reason on abort. */
  acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (this.held < this.limit) {
      this.held++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.releaser());
        },
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i !== -1) this.waiters.splice(i, 1);
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      // The slot passes straight to the next waiter: `held` stays as it is.
      if (next) next.grant();
      else this.held--;
    };
  }
}
