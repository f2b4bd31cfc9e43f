import type { SloThresholds } from '@fathom/contracts';

export interface RunFigures {
  readonly requests: number;
  readonly errorRate: number;
  readonly p95Ms: number | null;
  readonly p99Ms: number | null;
  readonly ttftP99Ms: number | null;
  readonly tpotP99Ms?: number | null;
}

/**
 * Checks a finished run against the campaign's own thresholds. A run with no requests fails:
 * it measured nothing. Each failure names the objective, the figure and the threshold.
 */
export function sloVerdict(figures: RunFigures, slo: SloThresholds): { passed: boolean; failures: string[] } {
  const failures: string[] = [];
  if (figures.requests === 0) failures.push('no request completed');
  const availability = 1 - figures.errorRate;
  if (slo.availability !== undefined && availability < slo.availability) {
    failures.push(
      `availability ${(availability * 100).toFixed(3)} % < ${(slo.availability * 100).toFixed(3)} %`,
    );
  }
  if (slo.maxErrorRate !== undefined && figures.errorRate > slo.maxErrorRate) {
    failures.push(
      `error rate ${(figures.errorRate * 100).toFixed(2)} % > ${(slo.maxErrorRate * 100).toFixed(2)} %`,
    );
  }
  const latency: Array<[string, number | null, number | undefined]> = [
    ['P95', figures.p95Ms, slo.p95Ms],
    ['P99', figures.p99Ms, slo.p99Ms],
    ['TTFT P99', figures.ttftP99Ms, slo.ttftP99Ms],
    ['TPOT P99', figures.tpotP99Ms ?? null, slo.tpotP99Ms],
  ];
  for (const [name, value, limit] of latency) {
    if (limit !== undefined && value !== null && value > limit) {
      failures.push(`${name} ${value.toFixed(1)} ms > ${limit} ms`);
    }
  }
  return { passed: failures.length === 0, failures };
}
