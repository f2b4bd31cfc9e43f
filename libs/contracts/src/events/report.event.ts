import { z } from 'zod';
import { envelopeShape } from '../envelope';
import { RunStatusSchema } from './run.event';
import { RootCauseCauseSchema } from './state.event';

export const QuantilesSchema = z.object({
  count: z.number().int().nonnegative(),
  mean: z.number().nullable(),
  p50: z.number().nullable(),
  p95: z.number().nullable(),
  p99: z.number().nullable(),
  max: z.number().nullable(),
});
export type Quantiles = z.infer<typeof QuantilesSchema>;

export const SloVerdictSchema = z.object({
  passed: z.boolean(),
  /** One line per objective that failed, naming the objective, the figure and the threshold. */
  failures: z.array(z.string()),
});

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
  }),
  throughput: z.object({ requestsPerSec: z.number(), outputTokensPerSec: z.number() }),
  tokens: z.object({ input: z.number().int(), output: z.number().int() }),
  semantic: z.object({
    responses: z.number().int().nonnegative(),
    outputTokens: z.number().int().nonnegative(),
    gapMeanMs: z.number().nullable(),
    tokenCountMismatches: z.number().int().nonnegative(),
    detectorSignals: z.number().int().nonnegative(),
    /**
     * Goodput (requests that succeeded within the per-request latency SLO, per second) and
     * semantic goodput (of those, the ones that also passed every semantic check), over the
     * judged responses and scaled to the run's request rate. Absent in reports made before.
     */
    goodput: z
      .object({
        judged: z.number().int().nonnegative(),
        good: z.number().int().nonnegative(),
        semanticallyGood: z.number().int().nonnegative(),
        goodputPerSec: z.number().nonnegative(),
        semanticGoodputPerSec: z.number().nonnegative(),
      })
      .optional(),
  }),
  gpu: z.object({
    scrapes: z.number().int().nonnegative(),
    gaps: z.number().int().nonnegative(),
    /** Last value seen per canonical metric (averaged over GPUs). */
    last: z.record(z.string(), z.number()),
  }),
  tier: z.string().nullable(),
  tierChanges: z.array(
    z.object({ at: z.number(), from: z.string().nullable(), to: z.string(), reason: z.string() }),
  ),
  slo: SloVerdictSchema,
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

/**
 * Whether the run measured the target at all. `valid: false` means the figures describe the
 * generator or a transient, not the target: the orchestrator may rerun (each reason says why).
 */
export const MeasurementValiditySchema = z.object({
  valid: z.boolean(),
  reasons: z.array(
    z.object({
      kind: z.enum(['generator-bottleneck', 'token-count-mismatch', 'no-steady-state']),
      detail: z.string(),
      figures: z.record(z.string(), z.number()),
    }),
  ),
});
export type MeasurementValidity = z.infer<typeof MeasurementValiditySchema>;

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
