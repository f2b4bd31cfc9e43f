import { z } from 'zod';
import { envelopeShape } from '../envelope';

/**
 * Bounds of the per-token confidence rows a token-stats signal may carry (`tokenSample`): the
 * semantic-monitor keeps at most `riskyPerRun` responses with hallucination-risk spans and
 * `plainPerRun` without per run, each cut to `maxTokens` rows of tokens cut to `maxTokenChars`,
 * so a run's heat map costs at most about 12 x 256 rows however long it lasts.
 */
export const TOKEN_SAMPLE_LIMITS = {
  maxTokens: 256,
  maxTokenChars: 32,
  riskyPerRun: 8,
  plainPerRun: 4,
} as const;

/** One token of a sampled response: its entropy, margin and risk level (the heat map's cell). */
export const TokenConfidenceRowSchema = z.object({
  token: z.string().max(TOKEN_SAMPLE_LIMITS.maxTokenChars),
  entropyBits: z.number().nonnegative(),
  /** p(top1) - p(top2); null without alternatives. */
  margin: z.number().nullable(),
  risk: z.enum(['low', 'elevated', 'high', 'unknown']),
});
export type TokenConfidenceRow = z.infer<typeof TokenConfidenceRowSchema>;

export const TokenSampleSchema = z.object({
  rows: z.array(TokenConfidenceRowSchema).max(TOKEN_SAMPLE_LIMITS.maxTokens),
  /** The response had more tokens than `rows` holds. */
  truncated: z.boolean(),
  /** Hallucination-risk spans, half-open token ranges [start, end) (they may reach past `rows`). */
  spans: z.array(z.object({ start: z.number().int().nonnegative(), end: z.number().int().nonnegative() })),
});
export type TokenSample = z.infer<typeof TokenSampleSchema>;

/** Token-level view of one response, as the semantic-monitor judged it. */
const tokenStatsShape = {
  requestId: z.string(),
  /**
   * When the request ended (epoch ms: the record's `startedAt + e2eMs`, as its digest's `at`): the
   * report places the response by it. Absent on stats stored before it was sent.
   */
  endedAt: z.number().optional(),
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
  /**
   * Per-token confidence rows, on a bounded sample of a run's responses only (see
   * `TOKEN_SAMPLE_LIMITS`), for the report's heat map. Optional: absent on the others.
   */
  tokenSample: TokenSampleSchema.optional(),
};

/** One response's token stats inside a `token-stats-batch` signal. */
export const TokenStatsEntrySchema = z.object(tokenStatsShape);
export type TokenStatsEntry = z.infer<typeof TokenStatsEntrySchema>;

/**
 * The token stats of every record of one request-telemetry batch, from the semantic-monitor: one
 * bus message (and one stored row) per batch, not per record, so that the records' cost to the
 * analyzer does not grow with each record (it was one message, one validation and one INSERT per
 * record). Its id is derived from the batch's, so a redelivered batch stays idempotent.
 */
export const TokenStatsBatchSignalSchema = z.object({
  ...envelopeShape,
  kind: z.literal('token-stats-batch'),
  stats: z.array(TokenStatsEntrySchema).min(1),
});
export type TokenStatsBatchSignal = z.infer<typeof TokenStatsBatchSignalSchema>;

/** One response's token stats with its batch's envelope: what the analysis reads per record. */
export const TokenStatsSignalSchema = z.object({
  ...envelopeShape,
  kind: z.literal('token-stats'),
  ...tokenStatsShape,
});

/** A batch's entries as per-record signals (ids `<batch id>/<request id>`). */
export function expandTokenStats(batch: TokenStatsBatchSignal): TokenStatsSignal[] {
  return batch.stats.map((entry) => ({
    id: `${batch.id}/${entry.requestId}`,
    schemaVersion: batch.schemaVersion,
    campaignId: batch.campaignId,
    runId: batch.runId,
    emittedAt: batch.emittedAt,
    kind: 'token-stats',
    ...entry,
  }));
}

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
  TokenStatsBatchSignalSchema,
  DetectorSignalSchema,
]);
export type SemanticSignal = z.infer<typeof SemanticSignalSchema>;
export type TokenStatsSignal = z.infer<typeof TokenStatsSignalSchema>;
export type DetectorSignal = z.infer<typeof DetectorSignalSchema>;

/** A semantic signal with token stats one per record (a batch expanded): what readers judge. */
export type RecordSemanticSignal = TokenStatsSignal | DetectorSignal;

/** A signal as read per record: a `token-stats-batch` becomes its per-record signals. */
export function perRecordSignals(signal: SemanticSignal): RecordSemanticSignal[] {
  return signal.kind === 'token-stats-batch' ? expandTokenStats(signal) : [signal];
}
