import {
  effectiveSlo,
  type CampaignSpec,
  type GpuTelemetry,
  type RunLifecycle,
  type RunStatus,
  type RunSummary,
  type SloTierChange,
  type TelemetryWindow,
  minOf,
  maxOf,
  pushTo,
} from '@fathom/contracts';
import { HISTOGRAM_NAMES, mergeWindows, quantilesFromHistogram, type MergedWindows } from '@fathom/load';
import { sloVerdict } from '../slo/slo-verdict';
import { goodputOf, measuredWindows, segmentFigures, sweepSummary } from './load-phases';
import { assertionCoverage, stepFigures } from './step-coverage';
import { missingShardsReason, telemetryCompleteness, type MissingShard } from './telemetry-completeness';
import type { TokenStatsFigures } from './token-stats.accumulator';

/** Everything the analyzer stored about one run. */
export interface RunEvidence {
  readonly spec: CampaignSpec | null;
  readonly lifecycle: readonly RunLifecycle[];
  readonly windows: readonly TelemetryWindow[];
  /** The run's token stats, folded (`TokenStatsAccumulator`). */
  readonly tokenStats: TokenStatsFigures;
  readonly detectorSignals: number;
  readonly gpu: readonly GpuTelemetry[];
  readonly tierChanges: readonly SloTierChange[];
  /** Set when the run was aborted by a user: the summary keeps that status. */
  readonly aborted: boolean;
  /**
   * The run's tier judged over the whole run (`judgeWholeRun`), as the report's objectives are.
   * Absent: the last tier change stands for it.
   */
  readonly wholeRun?: { readonly tier: string | null; readonly reason: string };
  /** Responses the semantic-monitor embedded (its `semantic-goodput` figures); null: not told. */
  readonly embedded?: number | null;
  /** Shards that started (or were planned) and never ended: the run is `partial`. */
  readonly missingShards?: readonly MissingShard[];
}

/**
 * Builds a run's summary from its evidence. Latency quantiles come from the exact merge of every
 * generator's HDR windows (not an average of per-window quantiles), so the figures are the same
 * whether one generator or twenty produced them. Counts and throughput cover every request;
 * latency, goodput and the SLO verdict only the measured ones (warm-up and cool-down apart).
 */
export function buildRunSummary(evidence: RunEvidence): RunSummary {
  const windows = dedupeWindows(evidence.windows);
  const merged = mergeWindows(windows);
  const { requests, errors, errorClasses } = merged;
  const percentiles = evidence.spec?.report?.percentiles;
  const measured = mergeWindows(measuredWindows(windows));
  const latencyMs = latencyOf(measured, percentiles);
  const measuredErrorRate = measured.requests ? measured.errors / measured.requests : 0;
  // The load's own extent: the windows tile each shard's load, first request to last answer. The
  // shards' lifecycle also holds what a generator did around it: its telemetry's drain after the
  // last request took 17 s of a 190 s run at 1,000 records a second, and throughput read 8 % low.
  // Without windows, the lifecycle; a shard that went silent ended when it was last heard of.
  const startedAt = windows.length
    ? min(windows.map((w) => w.windowStart))
    : min(evidence.lifecycle.filter((l) => l.phase === 'shard-started').map((l) => l.emittedAt));
  const endedAt = windows.length
    ? max(windows.map((w) => w.windowStart + w.windowMs))
    : max([
        ...evidence.lifecycle.filter((l) => l.phase !== 'shard-started').map((l) => l.emittedAt),
        ...(evidence.missingShards ?? []).flatMap((s) => (s.lastSeenAt === null ? [] : [s.lastSeenAt])),
      ]);
  const elapsedSec =
    startedAt !== null && endedAt !== null && endedAt > startedAt ? (endedAt - startedAt) / 1000 : 0;
  const outputTokens = merged.outputTokens;
  const errorRate = requests ? errors / requests : 0;
  const failedShards = evidence.lifecycle.filter((l) => l.phase === 'shard-failed');
  const missingShards = evidence.missingShards ?? [];
  const status: RunStatus = evidence.aborted
    ? 'aborted'
    : failedShards.length
      ? 'failed'
      : missingShards.length
        ? 'partial'
        : 'completed';
  const shardCount = missingShards.length ? (evidence.lifecycle[0]?.shard.count ?? null) : null;
  const sloStopped = evidence.lifecycle.find((l) => l.endReason === 'slo-failed');
  const endReason: RunSummary['endReason'] = evidence.aborted
    ? 'aborted'
    : sloStopped
      ? 'slo-failed'
      : evidence.lifecycle.some((l) => l.phase === 'shard-finished')
        ? 'duration'
        : undefined;
  const slo = effectiveSlo(evidence.spec?.slo ?? {}, evidence.spec?.scenario);
  const warmup = segmentFigures(windows, 'warmup', percentiles);
  const cooldown = segmentFigures(windows, 'cooldown', percentiles);
  const sweep = sweepSummary(windows, evidence.tokenStats.measuredByStep, slo, percentiles);

  const summary: RunSummary = {
    status,
    reason: evidence.aborted
      ? 'aborted by request'
      : sloStopped
        ? `stopped: SLO failed (${sloStopped.reason ?? 'thresholds'})`
        : [
            ...failedShards.map((l) => l.reason ?? 'shard failed'),
            ...(missingShards.length ? [missingShardsReason(missingShards, shardCount)] : []),
          ].join('; ') || null,
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
      responses: evidence.tokenStats.responses,
      outputTokens: evidence.tokenStats.outputTokens,
      gapMeanMs: evidence.tokenStats.gapMeanMs,
      tokenCountMismatches: evidence.tokenStats.tokenCountMismatches,
      chunks: evidence.tokenStats.chunks,
      serverCounted: evidence.tokenStats.serverCounted,
      detectorSignals: evidence.detectorSignals,
      goodput: goodputOf(evidence.tokenStats.measured, elapsedSec ? requests / elapsedSec : 0),
    },
    gpu: gpuSummary(evidence.gpu),
    tier: evidence.wholeRun
      ? evidence.wholeRun.tier
      : evidence.tierChanges.length
        ? evidence.tierChanges[evidence.tierChanges.length - 1].to
        : null,
    ...(evidence.wholeRun ? { tierReason: evidence.wholeRun.reason } : {}),
    tierChanges: evidence.tierChanges.map((t) => ({
      at: t.emittedAt,
      from: t.from,
      to: t.to,
      reason: t.reason,
    })),
    sampling: {
      requests,
      records: sum(
        evidence.lifecycle.filter((l) => l.phase !== 'shard-started'),
        (l) => l.counts?.recordsPublished ?? 0,
      ),
      semanticChecked: evidence.tokenStats.responses,
      embedded: evidence.embedded ?? null,
    },
    slo: sloVerdict(
      {
        requests: measured.requests,
        errorRate: measuredErrorRate,
        p95Ms: latencyMs.e2e.p95,
        p99Ms: latencyMs.e2e.p99,
        ttftP99Ms: latencyMs.ttft.p99,
        tpotP99Ms: latencyMs.tpot?.p99 ?? null,
        ...throughputFigures(requests, errors, elapsedSec, evidence.spec?.scenario),
      },
      slo,
    ),
    telemetry: telemetryCompleteness(evidence.lifecycle, windows, missingShards),
  };
  if (endReason) summary.endReason = endReason;
  const scenario = evidence.spec?.scenario;
  if (scenario?.type === 'chat') {
    const t = scenario.tokenizer ?? 'o200k_base';
    summary.tokenizer = typeof t === 'string' ? t : `hf:${t.path}`;
  }
  if (warmup) summary.warmup = warmup;
  if (cooldown) summary.cooldown = cooldown;
  if (sweep) summary.sweep = sweep;
  const adversarial = evidence.lifecycle
    .filter((l) => l.phase === 'shard-finished')
    .flatMap((l) => l.adversarial ?? [])
    .sort((a, b) => a.shard - b.shard || a.promptIndex - b.promptIndex);
  if (adversarial.length) summary.adversarial = adversarial;
  const assertions = assertionCoverage(evidence.spec, evidence.lifecycle);
  if (assertions) summary.assertions = assertions;
  const steps = stepFigures(evidence.spec, evidence.lifecycle);
  if (steps) summary.steps = steps;
  return summary;
}

/**
 * Whole-run throughput for the throughput objectives: successful requests per second, and the
 * vectors each request writes when the scenario is a RAG index layer.
 */
export function throughputFigures(
  requests: number,
  errors: number,
  elapsedSec: number,
  scenario?: CampaignSpec['scenario'],
): { successPerSec?: number; vectorsPerRequest?: number } {
  if (!(elapsedSec > 0)) return {};
  const successPerSec = (requests - errors) / elapsedSec;
  return scenario?.type === 'rag' && scenario.layer === 'index'
    ? { successPerSec, vectorsPerRequest: scenario.batchSize }
    : { successPerSec };
}

/** Every latency metric's quantiles, with the campaign's `report.percentiles` when it asks for some. */
export function latencyOf(merged: MergedWindows, percentiles?: readonly number[]): RunSummary['latencyMs'] {
  if (!percentiles?.length) return merged.quantiles;
  return Object.fromEntries(
    HISTOGRAM_NAMES.map((name) => [name, quantilesFromHistogram(merged.histograms[name], percentiles)]),
  ) as RunSummary['latencyMs'];
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
    for (const s of scrape.samples) pushTo(perMetric, s.metric, s.value);
    for (const [metric, values] of perMetric) {
      const seen = latest.get(metric);
      if (!seen || seen.at <= scrape.scrapedAt) latest.set(metric, { at: scrape.scrapedAt, values });
    }
  }
  const last: Record<string, number> = {};
  for (const [metric, { values }] of latest) last[metric] = values.reduce((a, b) => a + b, 0) / values.length;
  return { scrapes: scrapes.length, gaps: scrapes.filter((s) => s.health !== 'ok').length, last };
}

function sum<T>(items: readonly T[], f: (item: T) => number): number {
  let total = 0;
  for (const item of items) total += f(item);
  return total;
}

function min(values: number[]): number | null {
  return values.length ? minOf(values) : null;
}

function max(values: number[]): number | null {
  return values.length ? maxOf(values) : null;
}
