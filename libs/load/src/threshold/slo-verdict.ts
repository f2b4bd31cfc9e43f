import type { SloThresholds } from '@fathom/contracts';

export interface RunFigures {
  readonly requests: number;
  readonly errorRate: number;
  readonly p95Ms: number | null;
  readonly p99Ms: number | null;
  readonly ttftP99Ms: number | null;
  readonly tpotP99Ms?: number | null;
  /** Successful requests per second over the run; absent: throughput objectives are not judged (mid-run). */
  readonly successPerSec?: number;
  /** Vectors each request writes (a RAG index layer's batch); absent: not an index load. */
  readonly vectorsPerRequest?: number;
}

/** One objective of the campaign's own SLO, judged over the whole run. */
export interface SloObjectiveResult {
  /** `requests`, `availability`, `maxErrorRate`, `p95Ms`, `p99Ms`, `ttftP99Ms` or `tpotP99Ms`. */
  readonly objective: string;
  /** The run's figure (null: nothing measured, which holds except for `requests`). */
  readonly measured: number | null;
  readonly threshold: number;
  readonly ok: boolean;
  /** The failure line when missed (as `sloVerdict` lists it), else a line saying it holds. */
  readonly text: string;
}

/**
 * Judges every objective the campaign's thresholds name, plus that a request completed (a run
 * with none measured nothing). Each line names the objective, the figure and the threshold.
 */
export function sloObjectiveResults(figures: RunFigures, slo: SloThresholds): SloObjectiveResult[] {
  const results: SloObjectiveResult[] = [
    {
      objective: 'requests',
      measured: figures.requests,
      threshold: 1,
      ok: figures.requests > 0,
      text: figures.requests > 0 ? `${figures.requests} requests completed` : 'no request completed',
    },
  ];
  // A run where every request failed passes nothing, whatever thresholds it sets: its latencies
  // time failures, and no tier holds at 0 % availability.
  // (Listed only then, so the objectives a report or JUnit export shows stay the campaign's own.)
  if (figures.requests > 0 && figures.errorRate >= 1) {
    results.push({
      objective: 'succeeded',
      measured: 0,
      threshold: 1,
      ok: false,
      text: `no request succeeded: all ${figures.requests} failed`,
    });
  }
  const availability = 1 - figures.errorRate;
  if (slo.availability !== undefined) {
    const ok = !(availability < slo.availability);
    results.push({
      objective: 'availability',
      measured: availability,
      threshold: slo.availability,
      ok,
      text: `availability ${(availability * 100).toFixed(3)} % ${ok ? '>=' : '<'} ${(slo.availability * 100).toFixed(3)} %`,
    });
  }
  if (slo.maxErrorRate !== undefined) {
    const ok = !(figures.errorRate > slo.maxErrorRate);
    results.push({
      objective: 'maxErrorRate',
      measured: figures.errorRate,
      threshold: slo.maxErrorRate,
      ok,
      text: `error rate ${(figures.errorRate * 100).toFixed(2)} % ${ok ? '<=' : '>'} ${(slo.maxErrorRate * 100).toFixed(2)} %`,
    });
  }
  const latency: Array<[string, string, number | null, number | undefined]> = [
    ['p95Ms', 'P95', figures.p95Ms, slo.p95Ms],
    ['p99Ms', 'P99', figures.p99Ms, slo.p99Ms],
    ['ttftP99Ms', 'TTFT P99', figures.ttftP99Ms, slo.ttftP99Ms],
    ['tpotP99Ms', 'TPOT P99', figures.tpotP99Ms ?? null, slo.tpotP99Ms],
  ];
  for (const [objective, name, value, limit] of latency) {
    if (limit === undefined) continue;
    const ok = value === null || !(value > limit);
    results.push({
      objective,
      measured: value,
      threshold: limit,
      ok,
      text:
        value === null
          ? `${name}: nothing measured (limit ${limit} ms)`
          : `${name} ${value.toFixed(1)} ms ${ok ? '<=' : '>'} ${limit} ms`,
    });
  }
  if (slo.minRequestsPerSec !== undefined && figures.successPerSec !== undefined) {
    const rate = figures.successPerSec;
    const ok = rate > slo.minRequestsPerSec;
    results.push({
      objective: 'minRequestsPerSec',
      measured: rate,
      threshold: slo.minRequestsPerSec,
      ok,
      text: `throughput ${rate.toFixed(1)} successful req/s ${ok ? '>' : '<='} ${slo.minRequestsPerSec} req/s`,
    });
  }
  if (
    slo.maxSecondsPerMillionVectors !== undefined &&
    figures.successPerSec !== undefined &&
    figures.vectorsPerRequest !== undefined
  ) {
    const vectorsPerSec = figures.successPerSec * figures.vectorsPerRequest;
    const seconds = vectorsPerSec > 0 ? 1e6 / vectorsPerSec : null;
    const ok = seconds !== null && seconds < slo.maxSecondsPerMillionVectors;
    results.push({
      objective: 'maxSecondsPerMillionVectors',
      measured: seconds,
      threshold: slo.maxSecondsPerMillionVectors,
      ok,
      text:
        seconds === null
          ? `index: no vector written (limit ${slo.maxSecondsPerMillionVectors} s per million)`
          : `index ${seconds.toFixed(1)} s per million vectors (${vectorsPerSec.toFixed(0)} vectors/s) ${ok ? '<' : '>='} ${slo.maxSecondsPerMillionVectors} s`,
    });
  }
  return results;
}

/**
 * Checks a finished run against the campaign's own thresholds. A run with no requests fails: it
 * measured nothing; so does one where every request failed. Each failure names the objective,
 * the figure and the threshold.
 */
export function sloVerdict(figures: RunFigures, slo: SloThresholds): { passed: boolean; failures: string[] } {
  const failures = sloObjectiveResults(figures, slo)
    .filter((r) => !r.ok)
    .map((r) => r.text);
  return { passed: failures.length === 0, failures };
}
