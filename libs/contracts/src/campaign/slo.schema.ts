import { z } from 'zod';

/** The tier a run is in when no tier's objectives hold (reserved: no user tier may be named so). */
export const SLO_BREACH_TIER = 'SLO-breach';

export const LatencyMetricNameSchema = z.enum(['e2e', 'correctedE2e', 'ttft', 'itl', 'tpot']);
export const QuantileNameSchema = z.enum(['p50', 'p95', 'p99']);
const fraction = z.number().min(0).max(1);
const positiveMs = z.number().positive();

/**
 * One objective of a tier (the single definition: `@fathom/analysis` judges this type). Bounds
 * are inclusive unless said otherwise.
 */
export const SloObjectiveSchema = z.discriminatedUnion('kind', [
  /** Share of requests without error, e.g. 0.9995. */
  z.object({ kind: z.literal('availability'), min: fraction }).strict(),
  z
    .object({
      kind: z.literal('latency'),
      /** `correctedE2e` is E2E measured from the intended start (coordinated omission corrected). */
      metric: LatencyMetricNameSchema,
      quantile: QuantileNameSchema,
      maxMs: positiveMs,
    })
    .strict(),
  /** Share of requests that succeeded within the latency bounds given (GuideLLM's goodput). */
  z
    .object({
      kind: z.literal('goodput'),
      min: fraction,
      e2eMaxMs: positiveMs.optional(),
      ttftMaxMs: positiveMs.optional(),
    })
    .strict(),
  /** Goodput that also requires no hallucination-risk segment in the response. */
  z.object({ kind: z.literal('semantic-goodput'), min: fraction, e2eMaxMs: positiveMs.optional() }).strict(),
  /** Variance of the prefix (KV) cache hit rate across scrapes, exclusive (spec: healthy < 0.08). */
  z.object({ kind: z.literal('kv-hit-rate-variance'), max: z.number().positive() }).strict(),
  /** Drop of intent-recognition accuracy against the baseline, exclusive (spec: healthy < 5 %). */
  z.object({ kind: z.literal('intent-accuracy-drop'), max: fraction }).strict(),
  /** Agent task end-to-end success rate, exclusive (spec: healthy > 92 %). */
  z.object({ kind: z.literal('agent-success'), min: fraction }).strict(),
  /** Breaker trips per minute on any one node; exclusive (SLO-1 is entered at >= 1/min). */
  z.object({ kind: z.literal('breaker-trips'), maxPerMinute: z.number().positive() }).strict(),
]);
export type SloObjective = z.infer<typeof SloObjectiveSchema>;

/** A tier: a named set of objectives, all of which must hold for a run to be in it. */
export const SloTierSpecSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .max(64)
      .refine((n) => n !== SLO_BREACH_TIER, { message: `${SLO_BREACH_TIER} is reserved` }),
    objectives: z.array(SloObjectiveSchema).min(1),
  })
  .strict();
export type SloTierSpec = z.infer<typeof SloTierSpecSchema>;

/** Tiers, best first; a run is in the first whose objectives all hold, else in SLO-breach. */
export const SloTiersSchema = z
  .array(SloTierSpecSchema)
  .min(1, 'give at least one tier')
  .max(16)
  .superRefine((tiers, ctx) => {
    const seen = new Set<string>();
    tiers.forEach((tier, i) => {
      if (seen.has(tier.name))
        ctx.addIssue({ code: 'custom', message: `duplicate tier ${tier.name}`, path: [i, 'name'] });
      seen.add(tier.name);
    });
  });

/**
 * What a campaign asks for. This is the user-facing shape (REST body, YAML file), validated
 * strictly: unknown fields are refused so that a typo never silently means "default".
 */
export const SloThresholdsSchema = z
  .object({
    /** Availability objective as a fraction, e.g. 0.9995 (tier SLO-0, spec). */
    availability: z.number().gt(0).lte(1).optional(),
    p99Ms: z.number().positive().optional(),
    p95Ms: z.number().positive().optional(),
    ttftP99Ms: z.number().positive().optional(),
    /** P99 time per output token (vLLM's TPOT), ms. */
    tpotP99Ms: z.number().positive().optional(),
    maxErrorRate: z.number().min(0).max(1).optional(),
    /** Successful requests per second over the run, exclusive (spec: rerank > 38 QPS). */
    minRequestsPerSec: z.number().positive().optional(),
    /**
     * RAG index layer: seconds to write a million vectors at the run's rate (successful upserts
     * per second x batchSize), exclusive (spec: IVF-PQ build < 8.2 s per million vectors).
     */
    maxSecondsPerMillionVectors: z.number().positive().optional(),
    /**
     * A `rag` scenario is judged against the spec's baseline of its layer as well (thresholds
     * set here win): retrieve P99 < 145 ms (the spec measures it at 16 concurrent, top-100),
     * rerank > 38 QPS, index < 8.2 s per million vectors. See `RAG_LAYER_BASELINES`.
     */
    ragBaselines: z.boolean().optional(),
    /**
     * Stop the load once these thresholds fail (k6's `abortOnFail`), judged every second on what
     * each shard measured so far, from `delayMs` after the start (k6's `delayAbortEval`). The
     * run's end reason is then `slo-failed`.
     */
    abortOnFail: z
      .union([z.literal(true), z.object({ delayMs: z.number().int().min(0).default(0) }).strict()])
      .optional(),
    /**
     * The tiers the analyzer judges this campaign's runs against, best first; absent: the spec's
     * SLO-0 and SLO-1. Tier changes are published with these names.
     */
    tiers: SloTiersSchema.optional(),
  })
  .strict();
export type SloThresholds = z.infer<typeof SloThresholdsSchema>;

/** The spec's RAG layer baselines (anomaly class 2), as campaign thresholds. */
export const RAG_LAYER_BASELINES = {
  // Top-100 ANN query P99 < 145 ms at 16 concurrent (spec).
  retrieve: { p99Ms: 145 },
  // Cross-encoder > 38 QPS on an A10 (spec); its 32-slot semaphore fails fast when full.
  rerank: { minRequestsPerSec: 38 },
  // IVF-PQ build < 8.2 s per million vectors (spec).
  index: { maxSecondsPerMillionVectors: 8.2 },
} as const satisfies Record<'index' | 'retrieve' | 'rerank', Partial<SloThresholds>>;

/**
 * The thresholds a run is judged against: the campaign's own, plus its RAG layer's baseline when
 * `ragBaselines` is set for a `rag` scenario (the campaign's own thresholds win).
 */
export function effectiveSlo(slo: SloThresholds, scenario?: { type: string; layer?: string }): SloThresholds {
  if (!slo.ragBaselines || scenario?.type !== 'rag') return slo;
  const layer = scenario.layer as keyof typeof RAG_LAYER_BASELINES | undefined;
  return layer && layer in RAG_LAYER_BASELINES ? { ...RAG_LAYER_BASELINES[layer], ...slo } : slo;
}
