import type { GpuTelemetry } from '@fathom/contracts';
import { readingsDuring } from '@fathom/gpu';
import type { RecordDigest } from '../evidence/record-digest';
import type { GpuPoint } from '../evidence/run-timeline';

/** Requests listed per report, slowest first. */
export const SLOWEST_REQUESTS_LISTED = 5;
/** The readings named in a slow request's line (the rest stay in `server`). */
const HEADLINE_METRICS = [
  'requests_waiting',
  'requests_running',
  'kv_cache_usage_ratio',
  'preemptions_total',
  'gpu_util_pct',
  'dram_active_ratio',
];

/** One of the run's slowest requests, joined with what the target reported while it ran. */
export interface SlowRequest {
  readonly requestId: string | null;
  readonly serverRequestId: string | null;
  readonly traceId: string | null;
  readonly startedAt: number;
  readonly e2eMs: number;
  readonly ttftMs: number | null;
  readonly ok: boolean;
  /** Per metric: the highest reading during the request (any GPU) and the run's median. */
  readonly server: Record<string, { max: number; runMedian: number | null }>;
  /** Scrapes during the request (and the one just before, per source); failed ones are gaps. */
  readonly scrapes: number;
  readonly gaps: number;
  readonly text: string;
}

/**
 * The slowest sampled requests (by E2E) with the GPU and inference-server readings during each
 * (`readingsDuring`): what the server was doing when they ran, beside the run's median reading.
 */
export function slowestRequests(
  digests: readonly RecordDigest[],
  gpu: readonly GpuTelemetry[],
  n = SLOWEST_REQUESTS_LISTED,
): SlowRequest[] {
  const slowest = digests
    .filter((d) => Number.isFinite(d.e2eMs))
    .sort((a, b) => b.e2eMs - a.e2eMs)
    .slice(0, n);
  if (!slowest.length) return [];
  const medians = runMedians(gpu);
  return slowest.map((d) => {
    const during = readingsDuring(gpu, d.startedAt, d.startedAt + d.e2eMs);
    const server: Record<string, { max: number; runMedian: number | null }> = {};
    for (const reading of during.readings)
      for (const s of reading.samples) {
        const seen = server[s.metric];
        if (!seen || s.value > seen.max)
          server[s.metric] = { max: s.value, runMedian: medians.get(s.metric) ?? null };
      }
    const named = HEADLINE_METRICS.filter((m) => server[m] !== undefined).map(
      (m) =>
        `${m} up to ${round(server[m].max)}${server[m].runMedian !== null ? ` (run median ${round(server[m].runMedian!)})` : ''}`,
    );
    const ids = [
      d.requestId,
      d.serverRequestId && `server ${d.serverRequestId}`,
      d.traceId && `trace ${d.traceId}`,
    ]
      .filter(Boolean)
      .join(', ');
    const took = `${d.e2eMs.toFixed(0)} ms${d.ok ? '' : ` (failed: ${d.errorClass})`}`;
    const readings = during.readings.length
      ? named.length
        ? named.join(', ')
        : `${during.readings.length} scrapes, none of the headline metrics`
      : 'no server readings while it ran';
    return {
      requestId: d.requestId ?? null,
      serverRequestId: d.serverRequestId ?? null,
      traceId: d.traceId ?? null,
      startedAt: d.startedAt,
      e2eMs: d.e2eMs,
      ttftMs: d.ttftMs,
      ok: d.ok,
      server,
      scrapes: during.readings.length,
      gaps: during.gaps.length,
      text: `${ids || 'request'} took ${took}: ${readings}${during.gaps.length ? `; ${during.gaps.length} failed scrapes` : ''}`,
    };
  });
}

/** The timeline's ok scrapes as telemetry (when the raw scrapes are not at hand). */
export function telemetryOfPoints(points: readonly GpuPoint[]): GpuTelemetry[] {
  return points.map((p, i) => ({
    schemaVersion: 1,
    id: `point-${i}`,
    campaignId: '',
    runId: '',
    emittedAt: p.at,
    source: p.source,
    url: p.source,
    scrapedAt: p.at,
    health: 'ok',
    samples: [...p.samples],
  }));
}

function runMedians(gpu: readonly GpuTelemetry[]): Map<string, number> {
  const values = new Map<string, number[]>();
  for (const t of gpu) {
    if (t.health !== 'ok') continue;
    for (const s of t.samples) {
      const list = values.get(s.metric);
      if (list) list.push(s.value);
      else values.set(s.metric, [s.value]);
    }
  }
  const medians = new Map<string, number>();
  for (const [metric, vs] of values) {
    vs.sort((a, b) => a - b);
    medians.set(metric, vs[Math.floor(vs.length / 2)]);
  }
  return medians;
}

const round = (v: number) => Number(v.toFixed(3));
