import { z } from 'zod';
import { envelopeShape } from '../envelope';

/** A tier change of one run, with the objective and the figures that caused it. */
export const SloTierChangeSchema = z.object({
  ...envelopeShape,
  from: z.string().nullable(),
  to: z.string(),
  reason: z.string(),
  figures: z.record(z.string(), z.number()),
  /** The objective whose verdict caused the change (absent from older producers). */
  objective: z.string().optional(),
});
export type SloTierChange = z.infer<typeof SloTierChangeSchema>;

export const BreakerStateSchema = z.enum(['closed', 'open', 'half-open']);
export type BreakerState = z.infer<typeof BreakerStateSchema>;

export const BreakerChangeSchema = z.object({
  ...envelopeShape,
  breaker: z.object({ target: z.string(), layer: z.string(), node: z.string() }),
  from: BreakerStateSchema,
  to: BreakerStateSchema,
  reason: z.string(),
  /**
   * Request paths (as the load-generator sends them, e.g. `/v1/chat/completions`) this breaker
   * guards: a generator stops sending on them while the breaker is open. Absent: the whole layer.
   */
  paths: z.array(z.string()).optional(),
  /** Figures that caused the change (failure rate, slow-call rate, calls, trips per minute). */
  figures: z.record(z.string(), z.number()).optional(),
});
export type BreakerChange = z.infer<typeof BreakerChangeSchema>;

/**
 * The analyzer's live root-cause verdict for a run changed (a cause was first named, or the top
 * cause changed). `causes` is the ranked list at that moment, best first.
 */
export const RootCauseCauseSchema = z.object({
  kind: z.string(),
  title: z.string(),
  confidence: z.number().min(0).max(1),
  /** Epoch ms of the evidence's first and last bad observation. */
  since: z.number(),
  until: z.number(),
  evidence: z.array(z.string()),
  figures: z.record(z.string(), z.number()),
  advice: z.array(z.string()),
  /**
   * Where the thresholds that made this cause fire come from: the spec, a campaign setting, a
   * significance level (`statistics`: a test's bound, tuned on no target), or derived on the
   * simulator only (a figure not yet checked against a real target; a report shows it beside
   * the cause). Optional: causes named before it existed carry none.
   */
  thresholds: z
    .array(
      z.object({
        name: z.string(),
        value: z.number(),
        source: z.enum(['spec', 'campaign', 'statistics', 'simulator']),
        note: z.string(),
      }),
    )
    .optional(),
});
export type RootCauseCause = z.infer<typeof RootCauseCauseSchema>;
export type CauseThreshold = NonNullable<RootCauseCause['thresholds']>[number];

export const RootCauseChangeSchema = z.object({
  ...envelopeShape,
  /** Kind of the top cause, null when nothing is wrong any more. */
  top: z.string().nullable(),
  causes: z.array(RootCauseCauseSchema),
});
export type RootCauseChange = z.infer<typeof RootCauseChangeSchema>;
