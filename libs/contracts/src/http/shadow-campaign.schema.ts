import { z } from 'zod';
import { ShadowRequestSchema } from '../events/shadow.event';

/**
 * What is scrubbed from a production request before it is stored or sent anywhere. Each rule
 * replaces a match with a fixed token, so the three targets still receive the same prompt and
 * its length class barely moves.
 */
export const RedactionRulesSchema = z
  .object({
    emails: z.boolean().default(true),
    /** API keys and bearer tokens: `sk-...`, `Bearer ...`, long hex or base64url runs. */
    keys: z.boolean().default(true),
    /** Runs of 3 or more digits (card, phone, account, order numbers). */
    numbers: z.boolean().default(true),
    /** Extra patterns (JavaScript regex source, applied globally) and their replacement. */
    patterns: z
      .array(z.object({ regex: z.string().min(1), replacement: z.string().default('[REDACTED]') }).strict())
      .default([]),
  })
  .strict();
export type RedactionRules = z.infer<typeof RedactionRulesSchema>;

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

/**
 * Diffy's method with semantics. Every request is replayed against a primary, a secondary (same
 * version as the primary) and a candidate. The primary-secondary disagreement on a metric is the
 * noise floor: what the service does differently from itself. A candidate difference counts only
 * when it goes beyond that floor. Computed per endpoint and intent.
 */
export interface TargetObservation {
  readonly ok: boolean;
  readonly e2eMs: number;
  readonly ttftMs: number | null;
  /** Share of response tokens inside hallucination-risk segments (entropy from logprobs), 0..1. */
  readonly hallucinationRisk: number | null;
}

export interface ShadowSample {
  readonly endpoint: string;
  readonly intent: string;
  readonly primary: TargetObservation;
  readonly secondary: TargetObservation;
  readonly candidate: TargetObservation;
  /** Cosine similarity of the response embeddings; null when a response was missing. */
  readonly similarityPrimarySecondary: number | null;
  readonly similarityPrimaryCandidate: number | null;
}

export type ShadowMetric = 'e2eMs' | 'ttftMs' | 'dissimilarity' | 'hallucinationRisk' | 'errorRate';

export interface MetricComparison {
  readonly metric: ShadowMetric;
  /** P95 of |secondary - primary| (dissimilarity: P95 of 1 - cos(primary, secondary)). */
  readonly noiseFloor: number;
  /** Median of candidate - primary (dissimilarity: median of 1 - cos(primary, candidate)). */
  readonly candidateDifference: number;
  readonly samples: number;
  /** candidateDifference > noiseFloor + the metric's minimum resolution. */
  readonly beyondNoise: boolean;
}

export interface ShadowGroupReport {
  readonly endpoint: string;
  readonly intent: string;
  readonly samples: number;
  readonly metrics: MetricComparison[];
  /** Only the metrics whose candidate difference is beyond the noise floor. */
  readonly differences: MetricComparison[];
}
