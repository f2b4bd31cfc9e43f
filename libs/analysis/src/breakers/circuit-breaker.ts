import type { BreakerState } from '@fathom/contracts';

export interface BreakerConfig {
  /** Outcomes older than this (ms) no longer count. */
  readonly windowMs: number;
  /** And at most this many latest calls (resilience4j's count-based window of 100). */
  readonly maxCalls: number;
  /** No verdict on fewer calls than this in the window. */
  readonly minCalls: number;
  /** Open at or above this share of failed calls. */
  readonly failureRate: number;
  /** Open at or above this share of slow calls. */
  readonly slowCallRate: number;
  /** A call slower than this (ms) is slow. */
  readonly slowCallMs: number;
  /** Stay open this long (ms) before letting probes through (half-open). */
  readonly openMs: number;
  /** Probe calls judged in half-open; all must pass to close, one failure reopens. */
  readonly halfOpenProbes: number;
}

/** resilience4j's defaults where they fit (50 % failure rate, min 10 calls), sized for runs of seconds. */
export const DEFAULT_BREAKER_CONFIG: BreakerConfig = {
  windowMs: 10_000,
  maxCalls: 100,
  minCalls: 10,
  failureRate: 0.5,
  slowCallRate: 0.8,
  slowCallMs: 10_000,
  openMs: 5_000,
  halfOpenProbes: 3,
};

export interface BreakerKey {
  readonly target: string;
  readonly layer: string;
  readonly node: string;
}

export interface BreakerTransition {
  readonly key: BreakerKey;
  readonly at: number;
  readonly from: BreakerState;
  readonly to: BreakerState;
  readonly reason: string;
  readonly paths: readonly string[];
  readonly figures: Record<string, number>;
}

/** One judged call (or, for a shadow candidate, one judged window), at its event time (ms). */
export interface BreakerOutcome {
  readonly at: number;
  readonly ok: boolean;
  readonly slow: boolean;
}

/**
 * Everything a breaker judges from, to rebuild it in another process (`CircuitBreaker.restore`):
 * the state, since when (event time of its last transition, 0: never moved), when it last
 * opened, and the outcomes it still judges (closed: its window; half-open: the probes so far).
 */
export interface BreakerSnapshot {
  readonly key: BreakerKey;
  readonly state: BreakerState;
  readonly since: number;
  readonly openedAt: number;
  readonly outcomes: readonly BreakerOutcome[];
  readonly probes: readonly BreakerOutcome[];
  readonly paths: readonly string[];
}

/**
 * One breaker (closed / open / half-open) judged from observed call outcomes, on event time so a
 * replay of stored evidence gives the same transitions. The analyzer observes calls, it does not
 * make them: in half-open it judges the next `halfOpenProbes` calls that arrive.
 */
export class CircuitBreaker {
  private outcomes: BreakerOutcome[] = [];
  private stateValue: BreakerState = 'closed';
  private since = 0;
  private openedAt = 0;
  private probes: BreakerOutcome[] = [];
  readonly paths = new Set<string>();

  constructor(
    readonly key: BreakerKey,
    private readonly config: BreakerConfig = DEFAULT_BREAKER_CONFIG,
  ) {}

  /** The breaker `snapshot` described: it judges what comes next as that one would have. */
  static restore(snapshot: BreakerSnapshot, config: BreakerConfig = DEFAULT_BREAKER_CONFIG): CircuitBreaker {
    const breaker = new CircuitBreaker({ ...snapshot.key }, config);
    breaker.stateValue = snapshot.state;
    breaker.since = snapshot.since;
    breaker.openedAt = snapshot.openedAt;
    breaker.outcomes = snapshot.outcomes.map((o) => ({ ...o }));
    breaker.probes = snapshot.probes.map((o) => ({ ...o }));
    for (const path of snapshot.paths) breaker.paths.add(path);
    return breaker;
  }

  get state(): BreakerState {
    return this.stateValue;
  }

  snapshot(): BreakerSnapshot {
    return {
      key: { ...this.key },
      state: this.stateValue,
      since: this.since,
      openedAt: this.openedAt,
      outcomes: this.outcomes.map((o) => ({ ...o })),
      probes: this.probes.map((o) => ({ ...o })),
      paths: [...this.paths].sort(),
    };
  }

  /** Moves open -> half-open once `openMs` has passed. */
  tick(now: number): BreakerTransition | null {
    if (this.stateValue === 'open' && now - this.openedAt >= this.config.openMs) {
      this.probes = [];
      return this.move(now, 'half-open', `open for ${this.config.openMs} ms: probing`, {});
    }
    return null;
  }

  observe(at: number, ok: boolean, durationMs: number, path?: string): BreakerTransition[] {
    if (path) this.paths.add(path);
    const out: BreakerTransition[] = [];
    const ticked = this.tick(at);
    if (ticked) out.push(ticked);
    const outcome = { at, ok, slow: durationMs >= this.config.slowCallMs };
    if (this.stateValue === 'open') return out;
    if (this.stateValue === 'half-open') {
      this.probes.push(outcome);
      if (!ok || outcome.slow) {
        out.push(this.open(at, `half-open probe ${ok ? 'slow' : 'failed'}`, { probes: this.probes.length }));
      } else if (this.probes.length >= this.config.halfOpenProbes) {
        this.outcomes = [];
        out.push(
          this.move(at, 'closed', `${this.probes.length} half-open probes passed`, {
            probes: this.probes.length,
          }),
        );
      }
      return out;
    }
    this.outcomes.push(outcome);
    const cutoff = at - this.config.windowMs;
    while (this.outcomes.length && this.outcomes[0].at <= cutoff) this.outcomes.shift();
    if (this.outcomes.length > this.config.maxCalls)
      this.outcomes.splice(0, this.outcomes.length - this.config.maxCalls);
    const calls = this.outcomes.length;
    if (calls < this.config.minCalls) return out;
    const failures = this.outcomes.filter((o) => !o.ok).length;
    const slow = this.outcomes.filter((o) => o.slow).length;
    const figures = { calls, failureRate: failures / calls, slowCallRate: slow / calls };
    if (failures / calls >= this.config.failureRate) {
      out.push(
        this.open(
          at,
          `failure rate ${((100 * failures) / calls).toFixed(1)} % >= ${this.config.failureRate * 100} % over ${calls} calls`,
          figures,
        ),
      );
    } else if (slow / calls >= this.config.slowCallRate) {
      out.push(
        this.open(
          at,
          `slow-call rate ${((100 * slow) / calls).toFixed(1)} % >= ${this.config.slowCallRate * 100} % (>= ${this.config.slowCallMs} ms) over ${calls} calls`,
          figures,
        ),
      );
    }
    return out;
  }

  /** Opens on a signal from another service (prompt explosion, reranker busy, DRAM saturation...). */
  trip(at: number, reason: string, figures: Record<string, number> = {}): BreakerTransition | null {
    if (this.stateValue === 'open') return null;
    return this.open(at, reason, figures);
  }

  private open(at: number, reason: string, figures: Record<string, number>): BreakerTransition {
    this.openedAt = at;
    this.outcomes = [];
    return this.move(at, 'open', reason, figures);
  }

  private move(
    at: number,
    to: BreakerState,
    reason: string,
    figures: Record<string, number>,
  ): BreakerTransition {
    const from = this.stateValue;
    this.stateValue = to;
    this.since = at;
    return { key: this.key, at, from, to, reason, paths: [...this.paths].sort(), figures };
  }
}

/** Every breaker of a run, keyed by target/layer/node, with trips per minute per node. */
export class BreakerBoard {
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly trips: { node: string; at: number }[] = [];

  constructor(private readonly config: BreakerConfig = DEFAULT_BREAKER_CONFIG) {}

  private get(key: BreakerKey): CircuitBreaker {
    const id = `${key.target}|${key.layer}|${key.node}`;
    let breaker = this.breakers.get(id);
    if (!breaker) {
      breaker = new CircuitBreaker(key, this.config);
      this.breakers.set(id, breaker);
    }
    return breaker;
  }

  observe(key: BreakerKey, at: number, ok: boolean, durationMs: number, path?: string): BreakerTransition[] {
    return this.record(this.get(key).observe(at, ok, durationMs, path));
  }

  trip(
    key: BreakerKey,
    at: number,
    reason: string,
    figures?: Record<string, number>,
    path?: string,
  ): BreakerTransition[] {
    const breaker = this.get(key);
    if (path) breaker.paths.add(path);
    const t = breaker.trip(at, reason, figures);
    return this.record(t ? [t] : []);
  }

  tick(now: number): BreakerTransition[] {
    const out: BreakerTransition[] = [];
    for (const b of this.breakers.values()) {
      const t = b.tick(now);
      if (t) out.push(t);
    }
    return this.record(out);
  }

  /** Highest count of trips (transitions to open) of any one node in the minute before `now`. */
  tripsPerMinute(now: number): number {
    const perNode = new Map<string, number>();
    for (const t of this.trips)
      if (t.at > now - 60_000 && t.at <= now) perNode.set(t.node, (perNode.get(t.node) ?? 0) + 1);
    return perNode.size ? Math.max(...perNode.values()) : 0;
  }

  states(): { key: BreakerKey; state: BreakerState }[] {
    return [...this.breakers.values()].map((b) => ({ key: b.key, state: b.state }));
  }

  private record(transitions: BreakerTransition[]): BreakerTransition[] {
    for (const t of transitions) if (t.to === 'open') this.trips.push({ node: t.key.node, at: t.at });
    return transitions;
  }
}
