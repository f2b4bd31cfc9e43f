export interface ScrapeBackoffOptions {
  /** The normal scrape interval, used while the target is healthy. */
  readonly intervalMs: number;
  /** First delay after a failure. Defaults to intervalMs. */
  readonly initialBackoffMs?: number;
  /** Growth per consecutive failure. */
  readonly factor?: number;
  /** Cap on the delay. */
  readonly maxBackoffMs: number;
}

/**
 * When to scrape a target next: the normal interval while it answers; after failures, an
 * exponentially growing delay (initial x factor^(n-1)) capped at maxBackoffMs; back to the
 * interval on the first success. Deterministic (no jitter) so a collector's schedule is testable;
 * spread targets by their start offsets instead.
 */
export class ScrapeBackoff {
  private failures = 0;
  private readonly factor: number;
  private readonly initialMs: number;

  constructor(private readonly options: ScrapeBackoffOptions) {
    this.factor = options.factor ?? 2;
    this.initialMs = options.initialBackoffMs ?? options.intervalMs;
    if (!(options.intervalMs > 0) || !(this.factor >= 1) || !(options.maxBackoffMs >= this.initialMs)) {
      throw new Error(
        'ScrapeBackoff: need intervalMs > 0, factor >= 1 and maxBackoffMs >= the initial backoff',
      );
    }
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  /** Records a scrape's health and returns the delay before the next scrape. */
  record(health: 'ok' | 'down' | 'timeout' | 'garbage'): number {
    if (health === 'ok') {
      this.failures = 0;
      return this.options.intervalMs;
    }
    this.failures++;
    return this.nextDelayMs();
  }

  nextDelayMs(): number {
    if (this.failures === 0) return this.options.intervalMs;
    const delay = this.initialMs * this.factor ** (this.failures - 1);
    return Math.min(delay, this.options.maxBackoffMs);
  }
}
