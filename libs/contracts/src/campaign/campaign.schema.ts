import { z } from 'zod';
import { SloThresholdsSchema } from './slo.schema';
import { ScenarioSchema } from './scenario.schema';
import { LoadProfileSchema } from './load-profile.schema';
import { SemanticSpecSchema } from './semantic.schema';
import { ReportSpecSchema } from './report.schema';
import { SecretSchema } from './secret.schema';

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
    /** The JSON Schema an editor checks this file against (schema/campaign.schema.json); ignored by Fathom. */
    $schema: z.string().optional(),
    name: z.string().min(1).max(200),
    target: z
      .object({
        /** Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 */
        baseUrl: z.string().url(),
        /** Sent as `Authorization: Bearer`; by reference over the API (see SecretRefSchema). */
        apiKey: SecretSchema.optional(),
        /** Prometheus endpoint(s) for the gpu-collector to scrape while the run lasts. */
        metricsUrls: z.array(z.string().url()).default([]),
      })
      .strict(),
    scenario: ScenarioSchema,
    load: z
      .object({
        concurrency: z.number().int().positive().max(10000),
        durationMs: z
          .number()
          .int()
          .positive()
          .max(24 * 3600 * 1000),
        /** Per-request timeout; a request that exceeds it is classified `timeout`. */
        requestTimeoutMs: z.number().int().positive().default(30000),
        /**
         * Per-request records (semantic checks, embeddings, stored events) a shard publishes per
         * second at most: an adaptive budget that halves while the generator is client-bound.
         * Latency figures never sample: the HDR windows count every request.
         */
        recordsPerSecond: z.number().positive().max(100_000).default(100),
        /**
         * Per-request records the whole run keeps at most, over all its shards (the default is an
         * hour at the default budget): a run longer than `maxRecords / recordsPerSecond` seconds
         * records at `maxRecords / durationMs` instead, a sample spread evenly over the run, so
         * its stored events stay bounded (a day at 100 a second would be ~13 GB). Does not apply
         * to `recordSampleRate`.
         */
        maxRecords: z.number().int().positive().max(1_000_000_000).default(360_000),
        /** A fixed fraction of requests recorded instead of the budget (1 = all; 0 = none). */
        recordSampleRate: z.number().min(0).max(1).optional(),
        /** Number of shards the plan is cut into for load-generators in a consumer group. */
        shards: z.number().int().positive().max(256).default(1),
        /** When requests start. Absent means `closed` with `concurrency` users (the original shape). */
        profile: LoadProfileSchema.optional(),
        /**
         * Requests that start in the first `warmupMs` (or the first `warmupRequests` of each shard)
         * and in the last `cooldownMs` count apart: shown, never in latency verdicts. A sweep
         * applies them to each of its steps (GuideLLM's warmup/cooldown).
         */
        warmupMs: z.number().int().min(0).optional(),
        warmupRequests: z.number().int().min(0).optional(),
        cooldownMs: z.number().int().min(0).optional(),
      })
      .strict()
      .superRefine((load, ctx) => {
        const p = load.profile;
        if (p?.type === 'adaptive') {
          if (p.initialConcurrency > load.concurrency)
            ctx.addIssue({
              code: 'custom',
              message: 'must not exceed load.concurrency',
              path: ['profile', 'initialConcurrency'],
            });
          if (p.minConcurrency > p.initialConcurrency)
            ctx.addIssue({
              code: 'custom',
              message: 'must not exceed initialConcurrency',
              path: ['profile', 'minConcurrency'],
            });
        }
        if ((load.warmupMs ?? 0) + (load.cooldownMs ?? 0) >= load.durationMs)
          ctx.addIssue({
            code: 'custom',
            message: 'warmupMs + cooldownMs leave nothing of durationMs to measure',
            path: ['warmupMs'],
          });
        if (p && 'ratePerSec' in p && p.ratePerSec > 1_000_000)
          ctx.addIssue({ code: 'custom', message: 'rate above 1e6/s', path: ['profile', 'ratePerSec'] });
      }),
    slo: SloThresholdsSchema.default({}),
    reruns: TierRerunPolicySchema.default({ maxReruns: 1, cooldownMs: 5000 }),
    /** Semantic checks beyond the defaults: drift and intent accuracy against a baseline run. */
    semantic: SemanticSpecSchema.optional(),
    /** What the summary and report show beyond the defaults (extra percentiles). */
    report: ReportSpecSchema.optional(),
  })
  .strict();
export type CampaignSpec = z.infer<typeof CampaignSpecSchema>;
export type CampaignSpecInput = z.input<typeof CampaignSpecSchema>;
