import { performance } from 'node:perf_hooks';

/**
 * Time source of the serving engine, in model milliseconds. The real clock maps model time to
 * wall time through `timeScale`; the virtual clock runs a discrete-event simulation instantly,
 * so physics tests are exact and cost no CPU time waiting.
 */
export interface EngineClock {
  now(): number;
  /** Calls `fn` when model time reaches `at` (or at once if it has passed). */
  at(at: number, fn: () => void): void;
}

export class RealClock implements EngineClock {
  private readonly origin = performance.now();

  constructor(readonly timeScale: number) {}

  now(): number {
    const wall = performance.now() - this.origin;
    return this.timeScale === 0 ? wall : wall / this.timeScale;
  }

  at(at: number, fn: () => void): void {
    const delayWall = this.timeScale === 0 ? 0 : (at - this.now()) * this.timeScale;
    if (delayWall <= 0.5) setImmediate(fn);
    else setTimeout(fn, delayWall);
  }
}

/** Discrete-event clock for tests: `run()` executes events in time order until none is left. */
export class VirtualClock implements EngineClock {
  private time = 0;
  private sequence = 0;
  private readonly events: { at: number; order: number; fn: () => void }[] = [];

  now(): number {
    return this.time;
  }

  at(at: number, fn: () => void): void {
    this.events.push({ at: Math.max(at, this.time), order: this.sequence++, fn });
  }

  /** Runs events until the queue is empty or `until` (model ms) is reached. */
  run(until = Infinity): void {
    while (this.events.length > 0) {
      let best = 0;
      for (let i = 1; i < this.events.length; i++) {
        const e = this.events[i];
        const b = this.events[best];
        if (e.at < b.at || (e.at === b.at && e.order < b.order)) best = i;
      }
      const event = this.events[best];
      if (event.at > until) break;
      this.events.splice(best, 1);
      this.time = event.at;
      event.fn();
    }
    if (until !== Infinity) this.time = Math.max(this.time, until);
  }
}
