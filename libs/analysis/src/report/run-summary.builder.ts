import type {
  CampaignSpec,
  GpuTelemetry,
  RunLifecycle,
  RunStatus,
  RunSummary,
  SloTierChange,
  TelemetryWindow,
  TokenStatsSignal,
} from '@fathom/contracts';
import { mergeWindows } from '@fathom/load';
import { sloVerdict } from '../slo/slo-verdict';

/** Everything the analyzer stored about one run. */
export interface RunEvidence {
  readonly spec: CampaignSpec | null;
  readonly lifecycle: readonly RunLifecycle[];
  readonly windows: readonly TelemetryWindow[];
  readonly tokenStats: readonly TokenStatsSignal[];
  readonly detectorSignals: number;
  readonly gpu: readonly GpuTelemetry[];
  readonly tierChanges: readonly SloTierChange[];
  /** Set when the run was aborted by a user: the summary keeps that status. */
  readonly aborted: boolean;
}

/**
 * Builds a run's summary from its evidence. Latency quantiles come from the exact merge of every
 * generator's HDR windows (not an average of per-window quantiles), so the figures are the same
 * whether one generator or twenty produced them.
 */
export function buildRunSummary(evidence: RunEvidence): RunSummary {
  const windows = dedupeWindows(evidence.windows);
  const merged = mergeWindows(windows);
  const { requests, errors, errorClasses } = merged;
  const latencyMs: RunSummary['latencyMs'] = merged.quantiles;
  const startedAt = min(
    evidence.lifecycle.filter((l) => l.phase === 'shard-started').map((l) => l.emittedAt),
  );
  const endedAt = max(evidence.lifecycle.filter((l) => l.phase !== 'shard-started').map((l) => l.emittedAt));
  const elapsedSec =
    startedAt !== null && endedAt !== null && endedAt > startedAt ? (endedAt - startedAt) / 1000 : 0;
  const outputTokens = merged.outputTokens;
  const errorRate = requests ? errors / requests : 0;
  const failedShards = evidence.lifecycle.filter((l) => l.phase === 'shard-failed');
  const status: RunStatus = evidence.aborted ? 'aborted' : failedShards.length ? 'failed' : 'completed';
  const gaps = evidence.tokenStats.filter((s) => s.gapMeanMs !== null);

  return {
    status,
    reason: evidence.aborted
      ? 'aborted by request'
      : failedShards.map((l) => l.reason ?? 'shard failed').join('; ') || null,
    startedAt,
    endedAt,
    requests,
    errors,
    errorRate,
    errorClasses,
    dropped: merged.dropped,
    latencyMs,
    throughput: {
      requestsPerSec: elapsedSec ? requests / elapsedSec : 0,
      outputTokensPerSec: elapsedSec ? outputTokens / elapsedSec : 0,
    },
    tokens: { input: merged.inputTokens, output: outputTokens },
    semantic: {
      responses: evidence.tokenStats.length,
      outputTokens: sum(evidence.tokenStats, (s) => s.outputTokens),
      gapMeanMs: gaps.length
        ? sum(gaps, (s) => (s.gapMeanMs ?? 0) * s.gapCount) /
          Math.max(
            1,
            sum(gaps, (s) => s.gapCount),
          )
        : null,
      tokenCountMismatches: evidence.tokenStats.filter((s) => (s.tokenCountMismatch ?? 0) !== 0).length,
      detectorSignals: evidence.detectorSignals,
      goodput: goodputOf(evidence.tokenStats, elapsedSec ? requests / elapsedSec : 0),
    },
    gpu: gpuSummary(evidence.gpu),
    tier: evidence.tierChanges.length ? evidence.tierChanges[evidence.tierChanges.length - 1].to : null,
    tierChanges: evidence.tierChanges.map((t) => ({
      at: t.emittedAt,
      from: t.from,
      to: t.to,
      reason: t.reason,
    })),
    slo: sloVerdict(
      {
        requests,
        errorRate,
        p95Ms: latencyMs.e2e.p95,
        p99Ms: latencyMs.e2e.p99,
        ttftP99Ms: latencyMs.ttft.p99,
      },
      evidence.spec?.slo ?? {},
    ),
  };
}

/** A window redelivered (at-least-once) or republished counts once: keyed by generator, shard and seq. */
function dedupeWindows(windows: readonly TelemetryWindow[]): TelemetryWindow[] {
  const byKey = new Map<string, TelemetryWindow>();
  for (const w of windows) byKey.set(`${w.generatorId}/${w.shard}/${w.seq}`, w);
  return [...byKey.values()];
}

function gpuSummary(scrapes: readonly GpuTelemetry[]): RunSummary['gpu'] {
  const latest = new Map<string, { at: number; values: number[] }>();
  for (const scrape of scrapes) {
    if (scrape.health !== 'ok') continue;
    const perMetric = new Map<string, number[]>();
    for (const s of scrape.samples) perMetric.set(s.metric, [...(perMetric.get(s.metric) ?? []), s.value]);
    for (const [metric, values] of perMetric) {
      const seen = latest.get(metric);
      if (!seen || seen.at <= scrape.scrapedAt) latest.set(metric, { at: scrape.scrapedAt, values });
    }
  }
  const last: Record<string, number> = {};
  for (const [metric, { values }] of latest) last[metric] = values.reduce((a, b) => a + b, 0) / values.length;
  return { scrapes: scrapes.length, gaps: scrapes.filter((s) => s.health !== 'ok').length, last };
}

/**
 * Good: the request succeeded and met the per-request latency SLO (no SLO: success suffices);
 * semantically good: also passed every semantic check the monitor applied to it.
 */
function goodputOf(
  stats: readonly TokenStatsSignal[],
  requestsPerSec: number,
): RunSummary['semantic']['goodput'] {
  let good = 0;
  let semanticallyGood = 0;
  for (const s of stats) {
    if (s.assessment === 'error' || s.latencySloMet === false) continue;
    good++;
    if (Object.values(s.checks ?? {}).every(Boolean)) semanticallyGood++;
  }
  const judged = stats.length;
  return {
    judged,
    good,
    semanticallyGood,
    goodputPerSec: judged ? (requestsPerSec * good) / judged : 0,
    semanticGoodputPerSec: judged ? (requestsPerSec * semanticallyGood) / judged : 0,
  };
}

function sum<T>(items: readonly T[], f: (item: T) => number): number {
  let total = 0;
  for (const item of items) total += f(item);
  return total;
}

function min(values: number[]): number | null {
  return values.length ? Math.min(...values) : null;
}

function max(values: number[]): number | null {
  return values.length ? Math.max(...values) : null;
}
