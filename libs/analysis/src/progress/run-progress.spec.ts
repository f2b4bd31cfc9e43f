import type { BreakerChange, SloTierChange, TelemetryWindow } from '@fathom/contracts';
import { RunProgressSchema } from '@fathom/contracts';
import { encodeHistogram, newLatencyHistogram, recordMs } from '@fathom/load';
import { ProgressLatency, buildRunProgress, type RunProgressInput } from './run-progress';

const T0 = 1_700_000_000_000;
const envelope = (id: string, emittedAt: number) => ({
  id,
  campaignId: 'c',
  runId: 'r',
  schemaVersion: 1 as const,
  emittedAt,
});

function histogram(valuesMs: number[]): string {
  const h = newLatencyHistogram();
  for (const v of valuesMs) recordMs(h, v);
  return encodeHistogram(h);
}

function window(second: number, e2eMs: number[], extra: Partial<TelemetryWindow> = {}): TelemetryWindow {
  return {
    ...envelope(`w${second}`, T0 + (second + 1) * 1000),
    generatorId: 'g',
    shard: 0,
    windowStart: T0 + second * 1000,
    windowMs: 1000,
    seq: second,
    requests: e2eMs.length,
    errors: 0,
    errorClasses: {},
    dropped: 0,
    late: 0,
    inputTokens: 0,
    outputTokens: 0,
    histogramsUs: {
      e2e: histogram(e2eMs),
      correctedE2e: histogram(e2eMs),
      ttft: histogram(e2eMs.map((v) => v / 10)),
      itl: histogram([]),
    },
    ...extra,
  };
}

const base = (over: Partial<RunProgressInput>): RunProgressInput => ({
  runId: 'r',
  status: 'running',
  startedAt: T0,
  endedAt: null,
  plannedDurationMs: 10_000,
  windows: [],
  tierChanges: [],
  breakerChanges: [],
  nowMs: T0 + 4000,
  ...over,
});

describe(buildRunProgress.name, () => {
  it('gives elapsed and remaining time from the start and the planned duration', () => {
    const sut = buildRunProgress(base({}));
    expect(sut).toMatchObject({ elapsedMs: 4000, remainingMs: 6000, requests: 0, requestsPerSec: 0 });
    expect(sut.e2e).toEqual({ p50Ms: null, p99Ms: null });
    expect(RunProgressSchema.parse(sut)).toEqual(sut);
  });

  it('takes quantiles over every window and the rate over the newest 5 s', () => {
    const windows = Array.from({ length: 8 }, (_, s) =>
      window(s, s < 3 ? [100, 100] : Array.from({ length: 10 }, () => 200)),
    );
    const sut = buildRunProgress(base({ windows, nowMs: T0 + 8000 }));
    expect(sut.requests).toBe(56);
    expect(sut.requestsPerSec).toBeCloseTo(10, 5);
    expect(sut.e2e.p50Ms).toBeCloseTo(200, 0);
    expect(sut.ttft.p99Ms).toBeCloseTo(20, 0);
  });

  it('counts errors by class', () => {
    const sut = buildRunProgress(
      base({ windows: [window(0, [50, 50, 50], { errors: 2, errorClasses: { timeout: 2 } })] }),
    );
    expect(sut).toMatchObject({ errors: 2, errorClasses: { timeout: 2 } });
  });

  it('shows the newest tier and the breakers that are not closed', () => {
    const tier = (id: string, at: number, to: string): SloTierChange => ({
      ...envelope(id, at),
      from: null,
      to,
      reason: 'x',
      figures: {},
    });
    const breaker = (id: string, at: number, node: string, to: BreakerChange['to']): BreakerChange => ({
      ...envelope(id, at),
      breaker: { target: 't', layer: 'llm', node },
      from: 'closed',
      to,
      reason: 'x',
    });
    const sut = buildRunProgress(
      base({
        tierChanges: [tier('b', T0 + 2000, 'SLO-1'), tier('a', T0 + 1000, 'SLO-0')],
        breakerChanges: [
          breaker('1', T0 + 1000, 'n1', 'open'),
          breaker('2', T0 + 2000, 'n1', 'closed'),
          breaker('3', T0 + 2500, 'n2', 'half-open'),
        ],
      }),
    );
    expect(sut.tier).toBe('SLO-1');
    expect(sut.openBreakers).toEqual([{ breaker: 't/llm/n2', state: 'half-open' }]);
  });

  it('says the generator fell behind, and keeps "too short" out until the run ended', () => {
    const windows = [window(0, [10, 10, 10, 10], { late: 1, dropped: 1 })];
    const running = buildRunProgress(base({ windows }));
    expect(running.validity).toEqual({
      valid: false,
      reasons: ['generator-bottleneck'],
      late: 1,
      dropped: 1,
      behindShare: 0.4,
    });
    const ended = buildRunProgress(base({ windows, status: 'completed', endedAt: T0 + 5000 }));
    expect(ended.validity.reasons).toEqual(['generator-bottleneck', 'no-steady-state']);
    expect(ended.elapsedMs).toBe(5000);
  });

  it('decodes each window once when the same run is asked for again, with the same answer', () => {
    const windows = Array.from({ length: 6 }, (_, s) => window(s, [100 + s * 50, 400]));
    const latency = new ProgressLatency();
    const first = buildRunProgress(base({ windows: windows.slice(0, 3) }), latency);
    const decoded = latency.e2e.totalCount;
    // Asked again with the same windows (and a redelivered one): nothing is counted twice.
    buildRunProgress(base({ windows: [...windows.slice(0, 3), windows[1]] }), latency);
    expect(latency.e2e.totalCount).toBe(decoded);
    const cached = buildRunProgress(base({ windows }), latency);
    expect(cached).toEqual(buildRunProgress(base({ windows })));
    expect([first.requests, cached.requests]).toEqual([6, 12]);
    expect(latency.e2e.totalCount).toBe(12);
  });
});
