import type {
  BreakerChange,
  CampaignSpec,
  GpuTelemetry,
  MeasurementValidity,
  RunSummary,
  SloTierChange,
} from '@fathom/contracts';
import { smUtilisationHeatMap, type NormalisedSample } from '@fathom/gpu';
import { gpuCounterIncrease, gpuMax, type RunTimeline } from '../evidence/run-timeline';
import {
  evaluateObjective,
  kvHitRateVariance,
  type ObjectiveResult,
  type RecordCounts,
  type TierSpec,
} from '../objectives/objective.model';
import type { TrackedCause } from '../root-cause/root-cause.engine';
import { slowestRequests, telemetryOfPoints, type SlowRequest } from './slowest-requests';
import { SLO_BREACH_TIER as BREACH_TIER } from '@fathom/contracts';
import {
  schemaDriftFindings,
  toolContractRatesFromSummary,
  toolContractRatesOf,
  type SchemaDriftFinding,
  type ToolContractRates,
} from '../evidence/tool-drift';
import { buildRunSeries, type RunSeries } from './run-series';
import { redactSpec } from './spec-redaction.util';
import type { TokenStatsFigures } from './token-stats.accumulator';
import { foldReportDigests, type ReportDigestFigures } from './report-digests.accumulator';

/** Version of the report document's shape; bump on any breaking change. */
export const RUN_REPORT_DOCUMENT_VERSION = 2;

export interface RunReportDocument {
  readonly schemaVersion: typeof RUN_REPORT_DOCUMENT_VERSION;
  readonly runId: string;
  readonly campaignId: string;
  readonly summary: RunSummary;
  readonly validity: MeasurementValidity;
  /** The campaign as it ran, credentials redacted (`redactSpec`); absent from older reports. */
  readonly campaign?: { readonly name: string; readonly spec: unknown } | null;
  /** Figures over time, distributions, sampled token rows and records; absent from older reports. */
  readonly series?: RunSeries;
  /** Every tier's objectives judged over the whole run. */
  readonly objectives: Record<string, ObjectiveResult[]>;
  readonly tiers: {
    readonly final: string | null;
    readonly changes: {
      at: number;
      from: string | null;
      to: string;
      objective: string | null;
      reason: string;
      figures: Record<string, number>;
    }[];
  };
  readonly breakers: {
    readonly changes: {
      at: number;
      target: string;
      layer: string;
      node: string;
      from: string;
      to: string;
      reason: string;
    }[];
    readonly trips: number;
  };
  readonly rootCauses: TrackedCause[];
  /** The slowest sampled requests with their ids and the server's readings while each ran. */
  readonly slowestRequests: SlowRequest[];
  readonly semantic: {
    readonly judgedResponses: number;
    readonly riskyResponses: number;
    readonly stalledResponses: number;
    readonly tokenCountMismatches: number;
    readonly detectorSignals: Record<string, number>;
    /** Tool contracts (spec, anomaly class 4); empty lists for a run without tool calls. */
    readonly toolContracts: {
      /** Every drifted path the semantic-monitor named, oldest first, each with a line to read. */
      readonly drift: (SchemaDriftFinding & { readonly text: string })[];
      /**
       * Per tool version: the semantic-monitor's run-wide rates (its goodput summary) when the
       * summary arrived before the report, else the analyzer's own verdicts over the records.
       */
      readonly rates: (ToolContractRates & { readonly source: 'semantic-monitor' | 'analyzer' })[];
    };
  };
  readonly gpu: {
    readonly kvHitRateVariance: number | null;
    readonly kvHitRateVarianceHealthy: boolean | null;
    readonly kvUsagePeak: number | null;
    readonly preemptions: number | null;
    readonly dramActivePeak: number | null;
    readonly smHeatMap: {
      rows: string[];
      bucketMs: number;
      bucketStartsMs: number[];
      cells: (number | null)[][];
    };
  };
}

export interface RunReportInput {
  readonly runId: string;
  readonly campaignId: string;
  readonly summary: RunSummary;
  readonly timeline: RunTimeline;
  readonly tiers: readonly TierSpec[];
  readonly tierChanges: readonly SloTierChange[];
  readonly breakerChanges: readonly BreakerChange[];
  readonly rootCauses: readonly TrackedCause[];
  readonly validity: MeasurementValidity;
  readonly stallMs: number;
  /** The run's scrapes, failed ones included; absent: the timeline's ok scrapes. */
  readonly gpu?: readonly GpuTelemetry[];
  /** The run's campaign spec (redacted into the document); null when it was never stored. */
  readonly spec?: CampaignSpec | null;
  /**
   * The semantic-monitor's token stats, folded on this timeline's windows and digests: goodput
   * per window and the token samples.
   */
  readonly tokenStats?: TokenStatsFigures;
  /**
   * The run's digests folded (`ReportDigestsAccumulator`, on these tiers, `stallMs` and the whole
   * run's span); absent: folded here from the timeline's digests, every one of the run's.
   */
  readonly digests?: ReportDigestFigures;
}

/** The run judged as a whole: every tier's objectives, and the tier they put the run in. */
export interface WholeRunVerdict {
  readonly objectives: Record<string, ObjectiveResult[]>;
  /** The best tier all of whose objectives held over the whole run; null with no request. */
  readonly tier: string | null;
  /** The first objective the tier above `tier` missed, or 'all objectives hold'. */
  readonly reason: string;
}

/**
 * Every tier's objectives over the whole run, and the run's tier from them: the one figure the
 * summary, the report's objectives and the CLI's verdict share, so they cannot disagree (the
 * tier changes during the run, judged over sliding windows with hysteresis, are its course).
 */
export function judgeWholeRun(
  timeline: RunTimeline,
  tiers: readonly TierSpec[],
  breakerChanges: readonly BreakerChange[],
  /** The record objectives' counts over the whole run; absent: counted on the timeline's digests. */
  records?: RecordCounts,
): WholeRunVerdict {
  const start = timeline.startMs ?? 0;
  const whole = timeline.span(start - 1, timeline.latestMs ?? start);
  const ctx = { breakerTripsPerMinute: maxTripsPerMinute(breakerChanges) };
  const objectives: Record<string, ObjectiveResult[]> = {};
  for (const tier of tiers)
    objectives[tier.name] = tier.objectives.map((o) => evaluateObjective(o, whole, ctx, records));
  if (!whole.requests) return { objectives, tier: null, reason: 'no request to judge' };
  const misses: string[] = [];
  for (const tier of tiers) {
    const missed = objectives[tier.name].find((r) => !r.ok);
    if (!missed)
      return { objectives, tier: tier.name, reason: misses[misses.length - 1] ?? 'all objectives hold' };
    misses.push(`${tier.name} missed: ${missed.text}`);
  }
  return {
    objectives,
    tier: BREACH_TIER,
    reason: `no tier had all its objectives hold: ${misses.join('; ')}`,
  };
}

/** The versioned JSON document stored per run (`run_reports`) and served by the API. */
export function buildRunReportDocument(input: RunReportInput): RunReportDocument {
  const { timeline } = input;
  const start = timeline.startMs ?? 0;
  const end = timeline.latestMs ?? start;
  const whole = timeline.span(start - 1, end);
  const trips = input.breakerChanges.filter((b) => b.to === 'open').length;
  const digests =
    input.digests ??
    foldReportDigests(timeline.digests, {
      objectives: input.tiers.flatMap((t) => t.objectives),
      stallMs: input.stallMs,
      spanFromMs: start - 1,
      maxDigests: Number.POSITIVE_INFINITY,
    });
  if (digests.stallMs !== input.stallMs)
    throw new RangeError(
      `digests were folded with stalls from ${digests.stallMs} ms, the report counts them from ${input.stallMs} ms: fold them with the report's stallMs`,
    );
  const verdict = judgeWholeRun(timeline, input.tiers, input.breakerChanges, digests.wholeRun);
  const objectives = verdict.objectives;
  const detectorSignals: Record<string, number> = {};
  for (const s of timeline.detectors) detectorSignals[s.detector] = (detectorSignals[s.detector] ?? 0) + 1;
  const monitorRates = toolContractRatesFromSummary(timeline.detectors);
  const toolRates = monitorRates.length
    ? monitorRates.map((r) => ({ ...r, source: 'semantic-monitor' as const }))
    : toolContractRatesOf(digests.toolCalls).map((r) => ({ ...r, source: 'analyzer' as const }));
  const variance = kvHitRateVariance(whole);
  const heat = smUtilisationHeatMap(
    timeline.gpu.map((p) => ({
      atMs: p.at,
      samples: p.samples.map((s) => ({ ...s, source: p.source }) as unknown as NormalisedSample),
    })),
    1000,
  );
  return {
    schemaVersion: RUN_REPORT_DOCUMENT_VERSION,
    runId: input.runId,
    campaignId: input.campaignId,
    summary: input.summary,
    validity: input.validity,
    campaign: input.spec ? { name: input.spec.name, spec: redactSpec(input.spec) } : null,
    series: buildRunSeries({
      windows: timeline.windows,
      digests,
      gpu: timeline.gpu,
      detectors: timeline.detectors,
      tokenStats: input.tokenStats ?? null,
    }),
    objectives,
    tiers: {
      // The whole run's tier, as in the summary; `changes` is its course during the run.
      final: verdict.tier,
      changes: input.tierChanges.map((t) => ({
        at: t.emittedAt,
        from: t.from,
        to: t.to,
        objective: t.objective ?? null,
        reason: t.reason,
        figures: t.figures,
      })),
    },
    breakers: {
      changes: input.breakerChanges.map((b) => ({
        at: b.emittedAt,
        ...b.breaker,
        from: b.from,
        to: b.to,
        reason: b.reason,
      })),
      trips,
    },
    rootCauses: [...input.rootCauses],
    slowestRequests: slowestRequests(digests.slowest, input.gpu ?? telemetryOfPoints(timeline.gpu)),
    semantic: {
      ...digests.semantic,
      detectorSignals,
      toolContracts: {
        drift: schemaDriftFindings(timeline.detectors).map((f) => ({
          ...f,
          text: `${f.tool} ${f.version} ${f.path} ${f.change}${f.breaking ? '' : ' (breaks no reader)'}: ${f.detail}`,
        })),
        rates: toolRates.sort((a, b) => a.tool.localeCompare(b.tool) || a.version.localeCompare(b.version)),
      },
    },
    gpu: {
      kvHitRateVariance: variance,
      kvHitRateVarianceHealthy: variance === null ? null : variance < 0.08,
      kvUsagePeak: gpuMax(whole.gpu, 'kv_cache_usage_ratio'),
      preemptions: gpuCounterIncrease(whole.gpu, 'preemptions_total'),
      dramActivePeak: gpuMax(whole.gpu, 'dram_active_ratio'),
      smHeatMap: {
        rows: heat.rows,
        bucketMs: heat.bucketMs,
        bucketStartsMs: heat.bucketStartsMs,
        cells: heat.cells,
      },
    },
  };
}

function maxTripsPerMinute(changes: readonly BreakerChange[]): number {
  const opens = changes.filter((c) => c.to === 'open');
  let best = 0;
  for (const o of opens) {
    const perNode = opens.filter(
      (x) =>
        x.breaker.node === o.breaker.node && x.emittedAt >= o.emittedAt && x.emittedAt < o.emittedAt + 60_000,
    ).length;
    best = Math.max(best, perNode);
  }
  return best;
}
