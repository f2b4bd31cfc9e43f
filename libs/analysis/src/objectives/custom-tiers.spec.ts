import { SloTiersSchema, envelope, type TelemetryWindow } from '@fathom/contracts';
import { decodeHistogram, encodeHistogram, mergeWindows } from '@fathom/load';
import { RunTimeline } from '../evidence/run-timeline';
import { SLO_BREACH_TIER as BREACH_TIER } from '@fathom/contracts';
import { DEFAULT_TIER_POLICY, TierHysteresis, evaluateTiers, tierPolicyFor } from './tier.policy';

/** A campaign's `slo.tiers`, as parsed from its spec: a strict gold tier and a lax bronze one. */
const tiers = SloTiersSchema.parse([
  {
    name: 'gold',
    objectives: [
      { kind: 'availability', min: 0.999 },
      { kind: 'latency', metric: 'correctedE2e', quantile: 'p99', maxMs: 1 },
    ],
  },
  {
    name: 'bronze',
    objectives: [
      { kind: 'availability', min: 0.9 },
      { kind: 'latency', metric: 'correctedE2e', quantile: 'p99', maxMs: 50 },
    ],
  },
]);

const histogramOf = (ms: number, count: number) => {
  const h = decodeHistogram(mergeWindows([]).histogramsUs.e2e);
  h.recordValueWithCount(Math.round(ms * 1000), count);
  return encodeHistogram(h);
};

/** 20 one-second windows of 100 requests each, every one taking `ms`, `errors` of them failed. */
function timelineOf(ms: number, errors = 0): RunTimeline {
  const timeline = new RunTimeline();
  for (let seq = 0; seq < 20; seq++) {
    const latency = histogramOf(ms, 100);
    const window: TelemetryWindow = {
      ...envelope('c', 'r', 1_000 * (seq + 1)),
      generatorId: 'g',
      shard: 0,
      windowStart: 1_000 * seq,
      windowMs: 1_000,
      seq,
      requests: 100,
      errors,
      errorClasses: errors ? { http_5xx: errors } : {},
      dropped: 0,
      late: 0,
      inputTokens: 0,
      outputTokens: 0,
      histogramsUs: { e2e: latency, correctedE2e: latency, ttft: latency, itl: latency },
    };
    timeline.addWindow(window);
  }
  return timeline;
}

const NOW = 20_000;
const ctx = { breakerTripsPerMinute: 0 };

describe('custom tiers (campaign slo.tiers)', () => {
  const policy = tierPolicyFor(tiers);

  it('uses the campaign tiers when given and the spec defaults otherwise', () => {
    expect(policy.tiers.map((t) => t.name)).toEqual(['gold', 'bronze']);
    expect(tierPolicyFor(undefined)).toBe(DEFAULT_TIER_POLICY);
    expect(tierPolicyFor(undefined).tiers.map((t) => t.name)).toEqual(['SLO-0', 'SLO-1']);
  });

  it('puts a run with P99 0.5 ms and no errors in gold', () => {
    const sut = evaluateTiers(timelineOf(0.5), NOW, ctx, policy)!;
    expect(sut.candidate).toBe('gold');
    expect(sut.miss).toBeNull();
  });

  it('puts a run with P99 5 ms in bronze, naming the gold objective missed and its figures', () => {
    const sut = evaluateTiers(timelineOf(5), NOW, ctx, policy)!;
    expect(sut.candidate).toBe('bronze');
    expect(sut.miss).toMatchObject({ objective: 'correctedE2e p99', threshold: 1, ok: false });
    expect(sut.miss!.value).toBeCloseTo(5, 1);
    expect(sut.miss!.text).toMatch(/^gold missed: correctedE2e p99 5\.0 ms > 1 ms/);
  });

  it('puts a fast run with 5 % errors in bronze on availability', () => {
    const sut = evaluateTiers(timelineOf(0.5, 5), NOW, ctx, policy)!;
    expect(sut.candidate).toBe('bronze');
    expect(sut.miss).toMatchObject({ objective: 'availability', value: 0.95, threshold: 0.999 });
  });

  it('puts a run that misses bronze too in SLO-breach, and the same run in SLO-0 under the defaults', () => {
    expect(evaluateTiers(timelineOf(100), NOW, ctx, policy)).toMatchObject({
      candidate: BREACH_TIER,
      miss: { objective: 'correctedE2e p99', threshold: 50 },
    });
    expect(evaluateTiers(timelineOf(100), NOW, ctx)!.candidate).toBe('SLO-0');
  });

  it('judges nothing before a request ended after the warm-up, not even an open breaker', () => {
    const timeline = timelineOf(0.5, 100);
    const warmupEnd = timeline.startMs! + DEFAULT_TIER_POLICY.warmupMs;
    expect(evaluateTiers(timeline, warmupEnd - 1, { breakerTripsPerMinute: 5 })).toBeNull();
    expect(evaluateTiers(timeline, warmupEnd, { breakerTripsPerMinute: 5 })).toBeNull();
    expect(evaluateTiers(timeline, warmupEnd + 5_000, { breakerTripsPerMinute: 5 })).toMatchObject({
      candidate: BREACH_TIER,
      miss: { objective: 'availability', value: 0 },
    });
  });

  it('ranks the custom tiers for hysteresis: bronze is worse than gold', () => {
    const sut = new TierHysteresis(policy);
    const gold = evaluateTiers(timelineOf(0.5), NOW, ctx, policy)!;
    const bronze = evaluateTiers(timelineOf(5), NOW, ctx, policy)!;
    expect(sut.observe(gold)).toMatchObject({ from: null, to: 'gold' });
    expect(sut.observe(bronze)).toBeNull();
    expect(sut.observe(bronze)).toMatchObject({
      from: 'gold',
      to: 'bronze',
      objective: 'correctedE2e p99',
      figures: { threshold: 1 },
    });
  });
});
