import { z } from 'zod';
import { envelopeShape } from '../envelope';
import { AdversarialProbeSchema, RunStatusSchema } from './run.event';
import { RootCauseCauseSchema } from './state.event';

export const QuantilesSchema = z.object({
  count: z.number().int().nonnegative(),
  mean: z.number().nullable(),
  p50: z.number().nullable(),
  p95: z.number().nullable(),
  p99: z.number().nullable(),
  max: z.number().nullable(),
  /** The campaign's `report.percentiles` (`p90`, `p99.9`, ...); absent when it asks for none. */
  percentiles: z.record(z.string(), z.number().nullable()).optional(),
});
export type Quantiles = z.infer<typeof QuantilesSchema>;

export const SloVerdictSchema = z.object({
  passed: z.boolean(),
  /** One line per objective that failed, naming the objective, the figure and the threshold. */
  failures: z.array(z.string()),
});

const GoodputSchema = z.object({
  judged: z.number().int().nonnegative(),
  good: z.number().int().nonnegative(),
  semanticallyGood: z.number().int().nonnegative(),
  goodputPerSec: z.number().nonnegative(),
  semanticGoodputPerSec: z.number().nonnegative(),
});

const PhaseLatencySchema = z.object({
  e2e: QuantilesSchema,
  correctedE2e: QuantilesSchema,
  ttft: QuantilesSchema,
  itl: QuantilesSchema,
  tpot: QuantilesSchema,
});

/** Requests that started in a warm-up or cool-down: counted, shown, never judged. */
export const SegmentFiguresSchema = z.object({
  requests: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
  latencyMs: PhaseLatencySchema,
});

/**
 * One step of a sweep (GuideLLM's per-benchmark row): its load, what it achieved over its
 * measured segment, and the campaign's thresholds judged on that step alone.
 */
export const SweepStepSchema = z.object({
  index: z.number().int().nonnegative(),
  kind: z.enum(['run', 'synchronous', 'throughput', 'rate', 'concurrency']),
  /** Target rate summed over shards (rate steps); null for closed-model steps. */
  targetRatePerSec: z.number().nonnegative().nullable(),
  /** Virtual users summed over shards (closed-model steps); null for rate steps. */
  concurrency: z.number().int().positive().nullable(),
  /** Length of the measured segment (the longest shard's), ms. */
  durationMs: z.number().nonnegative(),
  requests: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
  errorRate: z.number().min(0).max(1),
  throughput: z.object({ requestsPerSec: z.number(), outputTokensPerSec: z.number() }),
  latencyMs: PhaseLatencySchema,
  /** From the sampled records the semantic-monitor judged; null when none of this step's were. */
  goodput: GoodputSchema.nullable(),
  slo: z.object({ passed: z.boolean(), failures: z.array(z.string()) }),
});
export type SweepStep = z.infer<typeof SweepStepSchema>;

/** Where the sweep's target stops keeping up. Steps are ordered by load (synchronous ... throughput). */
export const SweepKneeSchema = z.object({
  /** The highest-load step that met every campaign threshold; null: none did. */
  sloMaxStep: z.number().int().nonnegative().nullable(),
  sloMaxRequestsPerSec: z.number().nullable(),
  /** The lowest-load step whose goodput reached 95 % of the sweep's best: goodput stops rising there. */
  goodputPlateauStep: z.number().int().nonnegative().nullable(),
  goodputPeakPerSec: z.number().nullable(),
  text: z.string(),
});
export type SweepKnee = z.infer<typeof SweepKneeSchema>;
/**
 * Whether the run measured the target at all. `valid: false` means the figures describe the
 * generator or a transient, not the target: the orchestrator may rerun (each reason says why).
 */
export const MeasurementValiditySchema = z.object({
  valid: z.boolean(),
  reasons: z.array(
    z.object({
      /**
       * `client-bound`: the load-generator's own health (event-loop delay, CPU busy, send
       * lateness, in-flight backlog) says the client, not the target, limited the run.
       */
      kind: z.enum([
        'generator-bottleneck',
        'client-bound',
        'token-count-mismatch',
        'no-steady-state',
        'telemetry-lost',
      ]),
      detail: z.string(),
      figures: z.record(z.string(), z.number()),
    }),
  ),
  /**
   * The load generator's own health over the run's judged windows (each shard's first and last
   * left out), whether or not it crossed a client-bound threshold: what Fathom cost itself.
   * Absent when no window carried health.
   */
  generator: z
    .object({
      windows: z.number().int().nonnegative(),
      /** Median event-loop utilisation of the engine's thread. */
      loopUtilizationMedian: z.number().min(0).max(1),
      /** Highest window event-loop delay P99 (ms). */
      loopDelayP99MaxMs: z.number().nonnegative(),
      /** Median share of a window the engine's thread waited for its core; absent where not measured. */
      coreWaitShareMedian: z.number().min(0).max(1).optional(),
      /** Median share of a window the engine's thread was on its core; absent where not measured. */
      coreRunShareMedian: z.number().min(0).max(1).optional(),
    })
    .optional(),
});
export type MeasurementValidity = z.infer<typeof MeasurementValiditySchema>;

export const RunTelemetryCompletenessSchema = z.object({
  /** Requests the generators of the shards that ended say they sent (their shard-end counts). */
  requestsCounted: z.number().int().nonnegative(),
  /** Of those, requests in no stored window. */
  requestsMissing: z.number().int().nonnegative(),
  /** Shards that started and never ended: their generator died or was cut off. */
  shardsMissing: z.array(
    z.object({
      index: z.number().int().nonnegative(),
      generatorId: z.string().nullable(),
      /** When the analyzer last heard of the shard (window or lifecycle), epoch ms. */
      lastSeenAt: z.number().nullable(),
    }),
  ),
});
export type RunTelemetryCompleteness = z.infer<typeof RunTelemetryCompletenessSchema>;

/**
 * Assertion coverage of a run: every assertion the campaign declares (steps scenarios) and every
 * other one a driver tallied (`workflow.*`, `tool.*`), with its pass and fail counts summed over
 * the shards that ended. `passed`: ran, never failed; `failed`: failed at least once; `never-ran`:
 * declared, never evaluated (its step never ran, e.g. a dependency always failed).
 */
export const AssertionCoverageSchema = z.object({
  declared: z.number().int().nonnegative(),
  ran: z.number().int().nonnegative(),
  passed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  neverRan: z.number().int().nonnegative(),
  byName: z.array(
    z.object({
      name: z.string(),
      /** Declared by the campaign (false: a driver's own, e.g. `workflow.converged`). */
      declared: z.boolean(),
      state: z.enum(['passed', 'failed', 'never-ran']),
      passes: z.number().int().nonnegative(),
      failures: z.number().int().nonnegative(),
    }),
  ),
});
export type AssertionCoverage = z.infer<typeof AssertionCoverageSchema>;

/** One step of a steps scenario over the run: its kind, limits, runs, SLA misses and latency. */
export const StepFiguresSchema = z.object({
  name: z.string(),
  kind: z.enum(['http', 'grpc', 'websocket']),
  /** The step's own `budgetMs` and `concurrency`, null when it sets none. */
  budgetMs: z.number().nullable(),
  concurrency: z.number().int().nullable(),
  runs: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  skipped: z.number().int().nonnegative(),
  /** Runs over `budgetMs`: the step's own SLA misses. */
  slaMisses: z.number().int().nonnegative(),
  latencyMeanMs: z.number().nullable(),
  latencyMaxMs: z.number().nullable(),
  /** Mean time to the first message (TTFT-like); null when no run received one. */
  firstMessageMeanMs: z.number().nullable(),
  messages: z.number().int().nonnegative(),
});
export type StepFigures = z.infer<typeof StepFiguresSchema>;

/** A run's summary: what `GET /v1/runs/:id` returns and `fathom run` prints. */
export const RunSummarySchema = z.object({
  status: RunStatusSchema,
  reason: z.string().nullable(),
  startedAt: z.number().nullable(),
  endedAt: z.number().nullable(),
  requests: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
  errorRate: z.number().min(0).max(1),
  errorClasses: z.record(z.string(), z.number().int().nonnegative()),
  dropped: z.number().int().nonnegative(),
  latencyMs: z.object({
    e2e: QuantilesSchema,
    correctedE2e: QuantilesSchema,
    ttft: QuantilesSchema,
    itl: QuantilesSchema,
    /** Time per output token. Optional: summaries made before TPOT histograms lack it. */
    tpot: QuantilesSchema.optional(),
  }),
  throughput: z.object({ requestsPerSec: z.number(), outputTokensPerSec: z.number() }),
  tokens: z.object({ input: z.number().int(), output: z.number().int() }),
  /** Tokenizer of the client-side counts (`o200k_base`, `cl100k_base`, `hf:<path>`); absent from older summaries. */
  tokenizer: z.string().optional(),
  semantic: z.object({
    responses: z.number().int().nonnegative(),
    outputTokens: z.number().int().nonnegative(),
    gapMeanMs: z.number().nullable(),
    tokenCountMismatches: z.number().int().nonnegative(),
    /** Content chunks of the judged responses (what `outputTokens` counts without logprobs). */
    chunks: z.number().int().nonnegative().optional(),
    /** Judged responses whose server reported usage (the ones a token-count mismatch can be told on). */
    serverCounted: z.number().int().nonnegative().optional(),
    detectorSignals: z.number().int().nonnegative(),
    /**
     * Goodput (requests that succeeded within the per-request latency SLO, per second) and
     * semantic goodput (of those, the ones that also passed every semantic check), over the
     * judged responses and scaled to the run's request rate. Absent in reports made before.
     */
    goodput: GoodputSchema.optional(),
  }),
  gpu: z.object({
    scrapes: z.number().int().nonnegative(),
    gaps: z.number().int().nonnegative(),
    /** Last value seen per canonical metric (averaged over GPUs). */
    last: z.record(z.string(), z.number()),
  }),
  /**
   * The run's tier over the whole run: the best tier all of whose objectives held, judged as the
   * report's `objectives` are (null: nothing to judge). `tierChanges` is its course during the run.
   */
  tier: z.string().nullable(),
  /** Why the run is in `tier`: the objective the tier above missed, with its figure. */
  tierReason: z.string().optional(),
  tierChanges: z.array(
    z.object({ at: z.number(), from: z.string().nullable(), to: z.string(), reason: z.string() }),
  ),
  slo: SloVerdictSchema,
  /**
   * Why the load ended (absent from older summaries): `slo-failed` when `slo.abortOnFail` stopped
   * it, `reason` then naming the thresholds.
   */
  endReason: z.enum(['duration', 'aborted', 'slo-failed']).optional(),
  /** Warm-up and cool-down requests, apart from `latencyMs` and the verdicts (present when configured). */
  warmup: SegmentFiguresSchema.optional(),
  cooldown: SegmentFiguresSchema.optional(),
  /** Sweep: one row per step, in load order, and the knee (present for sweep runs). */
  sweep: z.object({ steps: z.array(SweepStepSchema), knee: SweepKneeSchema }).optional(),
  /**
   * `perturbation: adversarial-entropy`: per probed prompt, the original response's risk and each
   * variant's KL, whether it was sent, and its risk after (every shard's, by shard and prompt).
   */
  adversarial: z.array(AdversarialProbeSchema).optional(),
  /**
   * How many requests the figures rest on: every request is in the latency histograms; a budget
   * of them became per-request records (`records`), of which the semantic-monitor judged
   * `semanticChecked` (records that arrived) and embedded `embedded` (its CPU-adaptive sample).
   */
  sampling: z
    .object({
      requests: z.number().int().nonnegative(),
      records: z.number().int().nonnegative(),
      semanticChecked: z.number().int().nonnegative(),
      embedded: z.number().int().nonnegative().nullable(),
    })
    .optional(),
  /**
   * How complete the measurement is against the generators' own counts: requests they sent that
   * no stored window holds (telemetry lost on the way), and shards whose generator stopped
   * reporting before the shard ended (`partial`). Absent in reports made before.
   */
  telemetry: RunTelemetryCompletenessSchema.optional(),
  /** The analyzer's verdict on whether the run measured the target (as on the report). */
  validity: MeasurementValiditySchema.optional(),
  /** Which named assertions ran, passed, failed, never ran (absent: the run tallied none and declared none). */
  assertions: AssertionCoverageSchema.optional(),
  /** Steps scenarios: one row per step, in the campaign's order (absent for other scenarios). */
  steps: z.array(StepFiguresSchema).optional(),
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

export const RunReportSchema = z.object({
  ...envelopeShape,
  summary: RunSummarySchema,
  /** Version of the stored report document this event announces (absent from older producers). */
  reportVersion: z.number().int().positive().optional(),
  validity: MeasurementValiditySchema.optional(),
  /** Ranked root causes, best first (absent from older producers; empty when nothing was wrong). */
  rootCauses: z.array(RootCauseCauseSchema).optional(),
});
export type RunReport = z.infer<typeof RunReportSchema>;
