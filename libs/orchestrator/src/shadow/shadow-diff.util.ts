import { pushTo } from '@fathom/contracts';
import type {
  MetricComparison,
  ShadowGroupReport,
  ShadowMetric,
  ShadowSample,
  TargetObservation,
} from '@fathom/contracts';

/**
 * Smallest difference worth reporting, per metric, so that equal floating-point figures never
 * count as a difference: 1 ms of latency, 0.01 of similarity or risk share, 1 point of a rate.
 */
export const MIN_RESOLUTION: Record<ShadowMetric, number> = {
  e2eMs: 1,
  ttftMs: 1,
  dissimilarity: 0.01,
  hallucinationRisk: 0.01,
  errorRate: 0.01,
  toolCalls: 0.01,
  toolArguments: 0.01,
  schemaViolations: 0.01,
  refusals: 0.01,
};

/** Groups with fewer samples are listed but never report a difference. */
export const MIN_SAMPLES_PER_GROUP = 5;

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (sorted.length - 1) * q;
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

/**
 * Latency differences must also exceed this share of the primary's median (Diffy's relative
 * threshold beside its absolute one): a few samples of a loaded host differ by more than their
 * noise floor's P95 now and then, a regression worth naming does not hide under a fifth.
 */
export const RELATIVE_LATENCY_THRESHOLD = 0.2;

function compare(
  metric: ShadowMetric,
  noise: readonly number[],
  candidate: readonly number[],
  enough: boolean,
  primaryMedian = 0,
): MetricComparison {
  const noiseFloor = quantile(noise.map(Math.abs), 0.95);
  const candidateDifference = quantile(candidate, 0.5);
  const margin = Math.max(MIN_RESOLUTION[metric], RELATIVE_LATENCY_THRESHOLD * primaryMedian);
  return {
    metric,
    noiseFloor,
    candidateDifference,
    samples: candidate.length,
    beyondNoise: enough && candidate.length > 0 && candidateDifference > noiseFloor + margin,
  };
}

/**
 * A rate metric: the secondary's rate (against the primary) is the noise floor, as a single
 * figure; the candidate's beyond it by the metric's resolution counts.
 */
function compareRate(
  metric: ShadowMetric,
  noise: number,
  candidate: number,
  samples: number,
  enough: boolean,
): MetricComparison {
  const noiseFloor = Math.abs(noise);
  return {
    metric,
    noiseFloor,
    candidateDifference: candidate,
    samples,
    beyondNoise: enough && candidate > noiseFloor + MIN_RESOLUTION[metric],
  };
}

const callNames = (o: TargetObservation) => (o.toolCalls ?? []).map((c) => c.name).join('\u0000');
const callArgs = (o: TargetObservation) => (o.toolCalls ?? []).map((c) => c.arguments).join('\u0000');

export function compareShadowSamples(samples: readonly ShadowSample[]): ShadowGroupReport[] {
  const groups = new Map<string, ShadowSample[]>();
  for (const s of samples) pushTo(groups, `${s.endpoint}\u0000${s.intent}`, s);
  return [...groups.values()].map((group) => {
    const enough = group.length >= MIN_SAMPLES_PER_GROUP;
    const ok = group.filter((s) => s.primary.ok && s.secondary.ok && s.candidate.ok);
    const pairs = (pick: (o: TargetObservation) => number | null) => {
      const noise: number[] = [];
      const cand: number[] = [];
      const base: number[] = [];
      for (const s of ok) {
        const p = pick(s.primary);
        const sec = pick(s.secondary);
        const c = pick(s.candidate);
        if (p === null || sec === null || c === null) continue;
        noise.push(sec - p);
        cand.push(c - p);
        base.push(p);
      }
      return [noise, cand, base] as const;
    };
    const pairsOf = (pick: (o: TargetObservation) => number | null) => {
      const [noise, cand] = pairs(pick);
      return [noise, cand] as const;
    };
    const latency = (metric: 'e2eMs' | 'ttftMs', pick: (o: TargetObservation) => number | null) => {
      const [noise, cand, base] = pairs(pick);
      return compare(metric, noise, cand, enough, quantile(base, 0.5));
    };
    const sims = ok.filter(
      (s) => s.similarityPrimarySecondary !== null && s.similarityPrimaryCandidate !== null,
    );
    const errors = (pick: (s: ShadowSample) => TargetObservation) =>
      group.filter((s) => !pick(s).ok).length / group.length;
    // Rates over the samples where all three answered (and, for schema, all three were checkable).
    const rate = (items: readonly ShadowSample[], hit: (s: ShadowSample) => boolean) =>
      items.length === 0 ? 0 : items.filter(hit).length / items.length;
    const withCalls = ok.filter((s) => s.primary.toolCalls && s.secondary.toolCalls && s.candidate.toolCalls);
    const callsDiffer = (pick: (s: ShadowSample) => TargetObservation) => (s: ShadowSample) =>
      callNames(pick(s)) !== callNames(s.primary);
    const argsDiffer = (pick: (s: ShadowSample) => TargetObservation) => (s: ShadowSample) =>
      callNames(pick(s)) === callNames(s.primary) && callArgs(pick(s)) !== callArgs(s.primary);
    const checkable = ok.filter(
      (s) =>
        typeof s.primary.schemaValid === 'boolean' &&
        typeof s.secondary.schemaValid === 'boolean' &&
        typeof s.candidate.schemaValid === 'boolean',
    );
    const invalid = (pick: (s: ShadowSample) => TargetObservation) => (s: ShadowSample) =>
      pick(s).schemaValid === false;
    const judged = ok.filter(
      (s) =>
        s.primary.refused !== undefined &&
        s.secondary.refused !== undefined &&
        s.candidate.refused !== undefined,
    );
    const refused = (pick: (s: ShadowSample) => TargetObservation) => (s: ShadowSample) =>
      pick(s).refused === true;
    const rateOver = (
      metric: ShadowMetric,
      items: readonly ShadowSample[],
      hit: (pick: (s: ShadowSample) => TargetObservation) => (s: ShadowSample) => boolean,
      againstPrimary: boolean,
    ) => {
      const base = againstPrimary
        ? 0
        : rate(
            items,
            hit((s) => s.primary),
          );
      return compareRate(
        metric,
        rate(
          items,
          hit((s) => s.secondary),
        ) - base,
        rate(
          items,
          hit((s) => s.candidate),
        ) - base,
        items.length,
        enough && items.length >= MIN_SAMPLES_PER_GROUP,
      );
    };
    const metrics: MetricComparison[] = [
      latency('e2eMs', (o) => o.e2eMs),
      latency('ttftMs', (o) => o.ttftMs),
      compare(
        'dissimilarity',
        sims.map((s) => 1 - (s.similarityPrimarySecondary as number)),
        sims.map((s) => 1 - (s.similarityPrimaryCandidate as number)),
        enough,
      ),
      compare('hallucinationRisk', ...pairsOf((o) => o.hallucinationRisk), enough),
      compare(
        'errorRate',
        [errors((s) => s.secondary) - errors((s) => s.primary)],
        [errors((s) => s.candidate) - errors((s) => s.primary)],
        enough,
      ),
      rateOver('toolCalls', withCalls, callsDiffer, true),
      rateOver('toolArguments', withCalls, argsDiffer, true),
      rateOver('schemaViolations', checkable, invalid, false),
      rateOver('refusals', judged, refused, false),
    ];
    return {
      endpoint: group[0].endpoint,
      intent: group[0].intent,
      samples: group.length,
      metrics,
      differences: metrics.filter((m) => m.beyondNoise),
    };
  });
}
