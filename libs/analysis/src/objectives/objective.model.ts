import {
  KV_HIT_RATE_VARIANCE_HEALTHY_BELOW,
  PrefixCacheHitRateTracker,
  variance,
  type NormalisedSample,
} from '@fathom/gpu';
import type {
  LatencyMetricNameSchema,
  QuantileNameSchema,
  SloObjective,
  SloTierSpec,
} from '@fathom/contracts';
import type { z } from 'zod';
import type { SpanView } from '../evidence/run-timeline';
import type { RecordDigest } from '../evidence/record-digest';

export type LatencyMetricName = z.infer<typeof LatencyMetricNameSchema>;
export type QuantileName = z.infer<typeof QuantileNameSchema>;

/**
 * One objective of a tier: the campaign spec's `slo.tiers[].objectives[]` shape, defined once by
 * `SloObjectiveSchema` in `@fathom/contracts`. Thresholds are the spec's unless a user overrides them.
 */
export type Objective = SloObjective;

export interface ObjectiveContext {
  /** Highest trips per minute of any one node, over the last minute. */
  readonly breakerTripsPerMinute: number;
}

export interface ObjectiveResult {
  readonly objective: string;
  /** null: no data to judge (an objective without data holds). */
  readonly value: number | null;
  readonly threshold: number;
  readonly ok: boolean;
  /** For availability: how fast the error budget burns (1 = exactly at the objective). */
  readonly burnRate?: number;
  readonly text: string;
}

export function objectiveName(o: Objective): string {
  switch (o.kind) {
    case 'latency':
      return `${o.metric} ${o.quantile}`;
    default:
      return o.kind;
  }
}

const pct = (x: number) => `${(x * 100).toFixed(2)} %`;

/** The objectives judged on records (digests) rather than on windows. */
export type RecordObjective = Extract<Objective, { kind: 'goodput' | 'semantic-goodput' }>;

/** What the record objectives read of a span's digests: counts, so a report can fold them. */
export interface RecordCounts {
  /** Records judged and the good ones (`isGoodRecord`). */
  goodput(o: RecordObjective): { judged: number; good: number };
  /** Calls on the agent layer and the ok ones. */
  agentCalls(): { calls: number; ok: number };
}

/** Good for a goodput objective: succeeded within its latency budgets (and, semantic, no risk segment). */
export function isGoodRecord(o: RecordObjective, d: RecordDigest): boolean {
  return (
    d.ok &&
    (o.e2eMaxMs === undefined || d.e2eMs <= o.e2eMaxMs) &&
    // No first-token time (non-streamed): the TTFT budget does not apply, E2E does.
    (o.kind !== 'goodput' || o.ttftMaxMs === undefined || d.ttftMs === null || d.ttftMs <= o.ttftMaxMs) &&
    (o.kind !== 'semantic-goodput' || !d.riskSegments)
  );
}

/** The record counts of a list of digests, counted when asked. */
export function recordCountsOf(digests: readonly RecordDigest[]): RecordCounts {
  return {
    goodput: (o) => ({ judged: digests.length, good: digests.filter((d) => isGoodRecord(o, d)).length }),
    agentCalls: () => {
      const calls = digests.flatMap((d) => d.calls.filter((c) => c.layer === 'agent'));
      return { calls: calls.length, ok: calls.filter((c) => c.ok).length };
    },
  };
}

/**
 * Judges one objective over one span; the record objectives on `records` (the span's digests,
 * or a report's folded counts of them).
 */
export function evaluateObjective(
  o: Objective,
  span: SpanView,
  ctx: ObjectiveContext,
  records: RecordCounts = recordCountsOf(span.digests),
): ObjectiveResult {
  const name = objectiveName(o);
  const result = (
    value: number | null,
    threshold: number,
    ok: boolean,
    text: string,
    burnRate?: number,
  ): ObjectiveResult => ({
    objective: name,
    value,
    threshold,
    ok,
    text,
    ...(burnRate !== undefined ? { burnRate } : {}),
  });
  switch (o.kind) {
    case 'availability': {
      if (!span.requests) return result(null, o.min, true, 'availability: no requests');
      const availability = 1 - span.errors / span.requests;
      const budget = Math.max(1e-9, 1 - o.min);
      const burn = (1 - availability) / budget;
      const ok = availability >= o.min;
      return result(
        availability,
        o.min,
        ok,
        `availability ${pct(availability)} ${ok ? '>=' : '<'} ${pct(o.min)} (burn rate ${burn.toFixed(1)})`,
        burn,
      );
    }
    case 'latency': {
      const value = span.latency[o.metric][o.quantile];
      if (value === null) return result(null, o.maxMs, true, `${name}: no data`);
      const ok = value <= o.maxMs;
      return result(value, o.maxMs, ok, `${name} ${value.toFixed(1)} ms ${ok ? '<=' : '>'} ${o.maxMs} ms`);
    }
    case 'goodput':
    case 'semantic-goodput': {
      const { judged, good } = records.goodput(o);
      if (!judged) return result(null, o.min, true, `${o.kind}: no records`);
      const share = good / judged;
      const ok = share >= o.min;
      return result(share, o.min, ok, `${o.kind} ${pct(share)} ${ok ? '>=' : '<'} ${pct(o.min)}`);
    }
    case 'kv-hit-rate-variance': {
      const v = kvHitRateVariance(span);
      if (v === null) return result(null, o.max, true, 'KV-cache hit-rate variance: fewer than two readings');
      const ok = v < o.max;
      return result(v, o.max, ok, `KV-cache hit-rate variance ${v.toFixed(4)} ${ok ? '<' : '>='} ${o.max}`);
    }
    case 'intent-accuracy-drop': {
      const drops = span.detectors
        .filter((s) => s.figures.intentAccuracyDrop !== undefined)
        .map((s) => s.figures.intentAccuracyDrop);
      if (!drops.length)
        return result(null, o.max, true, 'intent-accuracy drop: no intent probe in this span');
      const drop = drops[drops.length - 1];
      const ok = drop < o.max;
      return result(drop, o.max, ok, `intent-accuracy drop ${pct(drop)} ${ok ? '<' : '>='} ${pct(o.max)}`);
    }
    case 'agent-success': {
      const { calls, ok: succeeded } = records.agentCalls();
      if (!calls) return result(null, o.min, true, 'agent success: no agent task in this span');
      const share = succeeded / calls;
      const ok = share > o.min;
      return result(share, o.min, ok, `agent success ${pct(share)} ${ok ? '>' : '<='} ${pct(o.min)}`);
    }
    case 'breaker-trips': {
      const v = ctx.breakerTripsPerMinute;
      const ok = v < o.maxPerMinute;
      return result(
        v,
        o.maxPerMinute,
        ok,
        `breaker trips ${v.toFixed(2)}/min ${ok ? '<' : '>='} ${o.maxPerMinute}/min on one node`,
      );
    }
  }
}

/** Variance of the per-interval prefix-cache hit rate over the span's scrapes; null below two points. */
export function kvHitRateVariance(span: Pick<SpanView, 'gpu'>): number | null {
  const tracker = new PrefixCacheHitRateTracker();
  const rates: number[] = [];
  for (const point of span.gpu) {
    const samples = point.samples.map((s) => ({ ...s, source: point.source }) as unknown as NormalisedSample);
    for (const p of tracker.observe(samples, point.at)) rates.push(p.hitRate);
  }
  return variance(rates) ?? null;
}

/** A tier: a named set of objectives (the spec's `slo.tiers[]`). Tiers are listed best first. */
export type TierSpec = Readonly<SloTierSpec>;

/**
 * The spec's tiers. SLO-0 normal: 99.95 %, P99 <= 800 ms, no breaker open, and the monitoring
 * matrix's healthy bounds (KV hit-rate variance < 0.08, intent-accuracy drop < 5 %, agent success
 * > 92 %). SLO-1 mild degradation: 99.5 %, P99 <= 1.2 s, entered at >= 1 trip/min on one node.
 */
export const DEFAULT_TIER_SPECS: readonly TierSpec[] = [
  {
    name: 'SLO-0',
    objectives: [
      { kind: 'availability', min: 0.9995 },
      { kind: 'latency', metric: 'correctedE2e', quantile: 'p99', maxMs: 800 },
      { kind: 'breaker-trips', maxPerMinute: 1 },
      { kind: 'kv-hit-rate-variance', max: KV_HIT_RATE_VARIANCE_HEALTHY_BELOW },
      { kind: 'intent-accuracy-drop', max: 0.05 },
      { kind: 'agent-success', min: 0.92 },
    ],
  },
  {
    name: 'SLO-1',
    objectives: [
      { kind: 'availability', min: 0.995 },
      { kind: 'latency', metric: 'correctedE2e', quantile: 'p99', maxMs: 1200 },
    ],
  },
];
