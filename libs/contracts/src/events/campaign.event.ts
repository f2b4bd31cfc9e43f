import { z } from 'zod';

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
    maxErrorRate: z.number().min(0).max(1).optional(),
  })
  .strict();
export type SloThresholds = z.infer<typeof SloThresholdsSchema>;

export const ChatMessageSchema = z
  .object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() })
  .strict();

export const ChatScenarioSchema = z
  .object({
    type: z.literal('chat'),
    model: z.string().min(1).default('fathom-sim'),
    /** Prompts cycled through in order; each is one user turn (system message optional). */
    prompts: z.array(z.string().min(1)).min(1),
    system: z.string().optional(),
    maxTokens: z.number().int().positive().max(32768).default(64),
    temperature: z.number().min(0).max(2).optional(),
    logprobs: z.boolean().default(false),
    topLogprobs: z.number().int().min(0).max(20).optional(),
  })
  .strict();
export type ChatScenario = z.infer<typeof ChatScenarioSchema>;

export const ScenarioSchema = z.discriminatedUnion('type', [ChatScenarioSchema]);
export type Scenario = z.infer<typeof ScenarioSchema>;

export const TierRerunPolicySchema = z
  .object({
    /** Most reruns one campaign may start because a tier or breaker changed. */
    maxReruns: z.number().int().min(0).max(100).default(1),
    /** No rerun starts sooner than this after the previous run of the campaign ended. */
    cooldownMs: z.number().int().min(0).default(5000),
  })
  .strict();

export const CampaignSpecSchema = z
  .object({
    name: z.string().min(1).max(200),
    target: z
      .object({
        /** Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 */
        baseUrl: z.string().url(),
        apiKey: z.string().optional(),
        /** Prometheus endpoint(s) for the gpu-collector to scrape while the run lasts. */
        metricsUrls: z.array(z.string().url()).default([]),
      })
      .strict(),
    scenario: ScenarioSchema,
    load: z
      .object({
        concurrency: z.number().int().positive().max(10000),
        durationMs: z.number().int().positive().max(24 * 3600 * 1000),
        /** Per-request timeout; a request that exceeds it is classified `timeout`. */
        requestTimeoutMs: z.number().int().positive().default(30000),
        /** Fraction of per-request records published besides the histograms (1 = all). */
        recordSampleRate: z.number().min(0).max(1).default(1),
        /** Number of shards the plan is cut into for load-generators in a consumer group. */
        shards: z.number().int().positive().max(256).default(1),
      })
      .strict(),
    slo: SloThresholdsSchema.default({}),
    reruns: TierRerunPolicySchema.default({ maxReruns: 1, cooldownMs: 5000 }),
  })
  .strict();
export type CampaignSpec = z.infer<typeof CampaignSpecSchema>;
export type CampaignSpecInput = z.input<typeof CampaignSpecSchema>;
