import {
  minOf,
  maxOf,
  type BreakerChange,
  type BreakerState,
  type RunProgress,
  type SloTierChange,
  type TelemetryWindow,
} from '@fathom/contracts';
import { decodeHistogram, newLatencyHistogram, quantilesFromHistogram } from '@fathom/load';
import { assessValidity } from '../validity/measurement-validity';

/** Seconds of the newest windows the live request rate is taken over. */
export const PROGRESS_RATE_SPAN_MS = 5000;

export interface RunProgressInput {
  runId: string;
  status: string;
  startedAt: number | null;
  endedAt: number | null;
  plannedDurationMs: number | null;
  windows: readonly TelemetryWindow[];
  tierChanges: readonly SloTierChange[];
  breakerChanges: readonly BreakerChange[];
  nowMs: number;
}

const pair = (q: { p50: number | null; p99: number | null }) => ({ p50Ms: q.p50, p99Ms: q.p99 });

/**
 * E2E and TTFT histograms of a run's windows, each window decoded once however often the
 * progress is asked for (by window id): decoding is the cost (about 2 ms per window here, so a
 * 10-minute run re-merged each second would cost more than a second every second).
 */
export class ProgressLatency {
  private readonly seen = new Set<string>();
  readonly e2e = newLatencyHistogram();
  readonly ttft = newLatencyHistogram();

  /** Counts the windows not counted before; returns those. */
  add(windows: readonly TelemetryWindow[]): TelemetryWindow[] {
    const added: TelemetryWindow[] = [];
    for (const window of windows) {
      if (this.seen.has(window.id)) continue;
      this.seen.add(window.id);
      this.e2e.add(decodeHistogram(window.histogramsUs.e2e));
      this.ttft.add(decodeHistogram(window.histogramsUs.ttft));
      added.push(window);
    }
    return added;
  }
}

/**
 * The progress of a run from its stored telemetry. While the run goes, "too few windows for a
 * steady state" is not a verdict yet and is left out; everything else the end-of-run validity
 * judges from windows is shown as it stands.
 */
export function buildRunProgress(
  input: RunProgressInput,
  latency: ProgressLatency = new ProgressLatency(),
): RunProgress {
  latency.add(input.windows);
  const merged = { requests: 0, errors: 0, late: 0, dropped: 0, errorClasses: {} as Record<string, number> };
  for (const w of input.windows) {
    merged.requests += w.requests;
    merged.errors += w.errors;
    merged.late += w.late;
    merged.dropped += w.dropped;
    for (const [errorClass, n] of Object.entries(w.errorClasses))
      merged.errorClasses[errorClass] = (merged.errorClasses[errorClass] ?? 0) + n;
  }
  const elapsedMs =
    input.startedAt === null ? 0 : Math.max(0, (input.endedAt ?? input.nowMs) - input.startedAt);

  const newestEnd = Math.max(0, maxOf(input.windows.map((w) => w.windowStart + w.windowMs)));
  const recent = input.windows.filter((w) => w.windowStart >= newestEnd - PROGRESS_RATE_SPAN_MS);
  const recentSpanMs = recent.length ? newestEnd - minOf(recent.map((w) => w.windowStart)) : 0;
  const requestsPerSec =
    recentSpanMs > 0 ? (recent.reduce((n, w) => n + w.requests, 0) * 1000) / recentSpanMs : 0;

  const tier = [...input.tierChanges].sort((a, b) => a.emittedAt - b.emittedAt).at(-1)?.to ?? null;
  const breakers = new Map<string, BreakerState>();
  for (const change of [...input.breakerChanges].sort((a, b) => a.emittedAt - b.emittedAt)) {
    const { target, layer, node } = change.breaker;
    breakers.set(`${target}/${layer}/${node}`, change.to);
  }
  const openBreakers = [...breakers]
    .filter((entry): entry is [string, Exclude<BreakerState, 'closed'>] => entry[1] !== 'closed')
    .map(([breaker, state]) => ({ breaker, state }));

  const running = input.endedAt === null;
  const validity = assessValidity(input.windows, [], false);
  const reasons = validity.reasons.filter(
    (r) => !(running && r.kind === 'no-steady-state' && r.figures.cv === undefined),
  );
  const iterations = merged.requests + merged.dropped;
  return {
    runId: input.runId,
    status: input.status,
    startedAt: input.startedAt,
    elapsedMs,
    remainingMs: input.plannedDurationMs === null ? null : Math.max(0, input.plannedDurationMs - elapsedMs),
    requests: merged.requests,
    errors: merged.errors,
    errorClasses: merged.errorClasses,
    requestsPerSec,
    e2e: pair(quantilesFromHistogram(latency.e2e)),
    ttft: pair(quantilesFromHistogram(latency.ttft)),
    tier,
    openBreakers,
    validity: {
      valid: reasons.length === 0,
      reasons: reasons.map((r) => r.kind),
      late: merged.late,
      dropped: merged.dropped,
      behindShare: iterations ? (merged.late + merged.dropped) / iterations : 0,
    },
  };
}
