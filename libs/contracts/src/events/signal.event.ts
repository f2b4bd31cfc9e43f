import { z } from 'zod';
import { envelopeShape } from '../envelope';

/** Token-level view of one streamed response, from the semantic-monitor. */
export const TokenStatsSignalSchema = z.object({
  ...envelopeShape,
  kind: z.literal('token-stats'),
  requestId: z.string(),
  outputTokens: z.number().int().nonnegative(),
  chunks: z.number().int().nonnegative(),
  gapCount: z.number().int().nonnegative(),
  gapMeanMs: z.number().nonnegative().nullable(),
  gapMaxMs: z.number().nonnegative().nullable(),
  /** Server-reported and client-counted output tokens disagree by this many (null: no usage). */
  tokenCountMismatch: z.number().int().nullable(),
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
});

export const SemanticSignalSchema = z.discriminatedUnion('kind', [TokenStatsSignalSchema, DetectorSignalSchema]);
export type SemanticSignal = z.infer<typeof SemanticSignalSchema>;
export type TokenStatsSignal = z.infer<typeof TokenStatsSignalSchema>;
export type DetectorSignal = z.infer<typeof DetectorSignalSchema>;
