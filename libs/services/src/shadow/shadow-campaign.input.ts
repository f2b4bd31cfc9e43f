import { z } from 'zod';
import { ShadowRequestSchema } from '@fathom/contracts';
import { RedactionRulesSchema } from './redaction.util';

const TargetSchema = z.object({ baseUrl: z.string().url(), apiKey: z.string().optional() }).strict();

/** A production request as a JSONL line or an inline entry: the body, and optionally its labels. */
export const ShadowLineSchema = ShadowRequestSchema.pick({ body: true, intent: true }).extend({
  endpoint: z.literal('/v1/chat/completions').default('/v1/chat/completions'),
});
export type ShadowLine = z.infer<typeof ShadowLineSchema>;

export const ShadowCampaignInputSchema = z
  .object({
    name: z.string().min(1).max(200),
    /** The version in production. */
    primary: TargetSchema,
    /** Another instance of the primary's version: its disagreement with the primary is the noise. */
    secondary: TargetSchema,
    /** The version under test. */
    candidate: TargetSchema,
    /** Model name sent to all three (overrides the production request's). */
    model: z.string().min(1),
    /**
     * OpenAI-compatible embeddings endpoint for semantic similarity of the three answers. Absent:
     * similarity is not compared (and says so), latency and hallucination risk still are.
     */
    embeddings: z
      .object({ baseUrl: z.string().url(), model: z.string().min(1) })
      .strict()
      .optional(),
    redaction: RedactionRulesSchema.default({ emails: true, keys: true, numbers: true, patterns: [] }),
    source: z.discriminatedUnion('type', [
      z
        .object({ type: z.literal('inline'), requests: z.array(ShadowLineSchema).min(1).max(10_000) })
        .strict(),
      z.object({ type: z.literal('jsonl'), path: z.string().min(1) }).strict(),
      z
        .object({
          /** `fathom.shadow.request.v1`: until maxRequests arrived or durationMs passed. */
          type: z.literal('topic'),
          maxRequests: z.number().int().positive().max(100_000),
          durationMs: z
            .number()
            .int()
            .positive()
            .max(24 * 3600 * 1000),
        })
        .strict(),
    ]),
    /** Requests replayed at once (each goes to the three targets together). */
    concurrency: z.number().int().positive().max(256).default(4),
    maxTokens: z.number().int().positive().max(8192).default(64),
    requestTimeoutMs: z.number().int().positive().default(30_000),
  })
  .strict();
export type ShadowCampaignInput = z.infer<typeof ShadowCampaignInputSchema>;
