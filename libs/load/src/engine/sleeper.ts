/**
 * Timers the run can cancel all at once: an abort must wake every sleeping executor and virtual
 * user at once (the run stops sending within a second), without leaving reactions behind on a
 * long-lived promise for every sleep (which would grow memory over a long run).
 */
export class Sleeper {
  private readonly pending = new Map<NodeJS.Timeout, () => void>();
  private woken = false;

  sleep(ms: number): Promise<void> {
    if (this.woken || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(timer);
        resolve();
      }, ms);
      this.pending.set(timer, resolve);
    });
  }

  /** Resolves every pending sleep now, and every later one immediately. */
  wakeAll(): void {
    this.woken = true;
    for (const [timer, resolve] of this.pending) {
      clearTimeout(timer);
      resolve();
    }
    this.pending.clear();
  }
}
