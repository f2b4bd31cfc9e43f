import { z } from 'zod';

const seed = z.number().int().default(1);
/** Open-model knobs: an iteration starting later than `lateToleranceMs` after its intended time is
 * late; one that could not start within `maxLatenessMs` (no free slot) is dropped. */
const openModelShape = {
  lateToleranceMs: z.number().min(0).default(10),
  maxLatenessMs: z.number().positive().default(5000),
};

/**
 * When requests start (k6's executors, GuideLLM's profiles). `load.concurrency` is the number of
 * virtual users for `closed`, and the cap on requests in flight for the open-model profiles.
 */
export const LoadProfileSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('closed'),
      seed,
      thinkTimeMs: z.number().min(0).default(0),
      /** Uniform jitter added to the think time, [0, thinkTimeJitterMs). */
      thinkTimeJitterMs: z.number().min(0).default(0),
    })
    .strict(),
  z
    .object({ type: z.literal('constant-rate'), seed, ratePerSec: z.number().positive(), ...openModelShape })
    .strict(),
  z
    .object({ type: z.literal('poisson'), seed, ratePerSec: z.number().positive(), ...openModelShape })
    .strict(),
  z
    .object({
      /**
       * Gamma-distributed gaps (vllm bench serve `--burstiness`): shape `burstiness`, mean 1/rate.
       * 1 is Poisson; below 1 burstier, above 1 more regular.
       */
      type: z.literal('gamma'),
      seed,
      ratePerSec: z.number().positive(),
      burstiness: z.number().gt(0).max(1000).default(1),
      ...openModelShape,
    })
    .strict(),
  z
    .object({
      type: z.literal('ramping-rate'),
      seed,
      startRatePerSec: z.number().min(0),
      /** Rate moves linearly to each stage's target over its duration; the last rate is held. */
      stages: z
        .array(
          z.object({ durationMs: z.number().int().positive(), targetRatePerSec: z.number().min(0) }).strict(),
        )
        .min(1),
      ...openModelShape,
    })
    .strict(),
  z
    .object({
      /**
       * GuideLLM's sweep: synchronous, throughput, then `rates` constant rates in between; or, with
       * `concurrencies`, one closed-model step per number of users (vllm bench `--max-concurrency`).
       * Each step gets an equal share of durationMs.
       */
      type: z.literal('sweep'),
      seed,
      rates: z.number().int().min(1).max(50).default(5),
      concurrencies: z.array(z.number().int().positive().max(10000)).min(1).max(50).optional(),
      ...openModelShape,
    })
    .strict(),
  z
    .object({
      type: z.literal('replay'),
      seed,
      /**
       * `jsonl`: `{"timestampMs": n, "prompt"?: s}` per line; `otel`: an OTLP/JSON trace export, or
       * the OpenTelemetry file exporter's output (one export per line); `burstgpt`: BurstGPT's CSV
       * (Timestamp s, Request tokens, Response tokens); `mooncake`: Mooncake's JSONL (timestamp ms,
       * input_length, output_length, hash_ids). Token-length traces get synthetic prompts of those
       * lengths in the scenario's tokenizer (Mooncake's hash_ids as shared 512-token blocks).
       */
      path: z.string().min(1),
      format: z.enum(['jsonl', 'otel', 'burstgpt', 'mooncake']).default('jsonl'),
      /**
       * `arrivals`: the recorded clock. `intent-paths` (otel): arrivals at the recorded times, each
       * request drawing its trace's intent path by the paths' weights (seeded), not the recorded one.
       */
      mode: z.enum(['arrivals', 'intent-paths']).default('arrivals'),
      /** 2 = twice as fast as recorded. */
      speed: z.number().positive().default(1),
      ...openModelShape,
    })
    .strict(),
  z
    .object({
      type: z.literal('adaptive'),
      seed,
      /** Control law; see libs/load/src/adaptive/aimd.controller.ts. */
      law: z.literal('aimd').default('aimd'),
      p95BudgetMs: z.number().positive(),
      metric: z.enum(['e2e', 'ttft']).default('e2e'),
      /** GPU memory used fraction (0..1) not to exceed, from the gpu-collector's readings. */
      gpuMemoryCeiling: z.number().gt(0).max(1).optional(),
      initialConcurrency: z.number().int().positive().default(1),
      minConcurrency: z.number().int().positive().default(1),
      increaseStep: z.number().int().positive().default(1),
      decreaseFactor: z.number().gt(0).lt(1).default(0.7),
      intervalMs: z.number().int().min(100).default(1000),
    })
    .strict(),
]);
export type LoadProfile = z.infer<typeof LoadProfileSchema>;
export type LoadProfileType = LoadProfile['type'];
