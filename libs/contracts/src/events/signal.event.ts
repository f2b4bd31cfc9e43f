import { z } from 'zod';
import { envelopeShape } from '../envelope';

/** Token-level view of one streamed response, from the semantic-monitor. */
export const TokenStatsSignalSchema = z.object({
  ...envelopeShape,
  kind: z.literal('token-stats'),
  requestId: z.string(),
  /** The record's sweep step and segment, for per-step goodput (absent when the record had none). */
  phase: z
    .object({ index: z.number().int().nonnegative(), segment: z.enum(['warmup', 'measured', 'cooldown']) })
    .optional(),
  outputTokens: z.number().int().nonnegative(),
  chunks: z.number().int().nonnegative(),
  gapCount: z.number().int().nonnegative(),
  gapMeanMs: z.number().nonnegative().nullable(),
  gapMaxMs: z.number().nonnegative().nullable(),
  /** Server-reported and client-counted output tokens disagree by this many (null: no usage). */
  tokenCountMismatch: z.number().int().nullable(),
  /**
   * What the monitor could judge of this response. `ok`: logprobs with alternatives;
   * `no-logprobs` / `no-top-logprobs`: not requested or no alternatives returned (no hallucination
   * verdict); `empty`: no content and no tool call; `error`: the request failed; `invalid-text`:
   * the content holds U+FFFD (bytes that were not UTF-8) or unpaired surrogates.
   */
  assessment: z.enum(['ok', 'no-logprobs', 'no-top-logprobs', 'empty', 'error', 'invalid-text']).optional(),
  meanEntropyBits: z.number().nonnegative().nullable().optional(),
  maxWindowMeanBits: z.number().nonnegative().nullable().optional(),
  /** Hallucination-risk segments found (each also published as a `hallucination-risk` detector signal). */
  riskSegments: z.number().int().nonnegative().optional(),
  /** Every latency SLO of the run met and no error; null when the run's SLO is unknown to the monitor. */
  latencySloMet: z.boolean().nullable().optional(),
  /** Named semantic check -> passed, for semantic goodput (`computeGoodput` in @fathom/semantic). */
  checks: z.record(z.string(), z.boolean()).optional(),
});

/** A semantic check failed or a detector fired; the analyzer may open a breaker on it. */
export const DetectorSignalSchema = z.object({
  ...envelopeShape,
  kind: z.literal('detector'),
  detector: z.string(),
  requestId: z.string().nullable(),
  severity: z.enum(['info', 'warning', 'critical']),
  message: z.string(),
  figures: z.record(z.string(), z.number()),
  /**
   * Text facts of the finding that are not numbers (schema drift: tool, version, path, change).
   * Optional: older monitors send none.
   */
  labels: z
    .record(z.string().max(64), z.string().max(300))
    .refine((l) => Object.keys(l).length <= 16, { message: 'at most 16 labels' })
    .optional(),
});

export const SemanticSignalSchema = z.discriminatedUnion('kind', [
  TokenStatsSignalSchema,
  DetectorSignalSchema,
]);
export type SemanticSignal = z.infer<typeof SemanticSignalSchema>;
export type TokenStatsSignal = z.infer<typeof TokenStatsSignalSchema>;
export type DetectorSignal = z.infer<typeof DetectorSignalSchema>;
