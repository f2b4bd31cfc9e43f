import { z } from 'zod';
import { faultSpecSchema } from '../faults/fault.types';

/**
 * Configuration of the simulated target. Every number is a default a user can override from
 * `fathom sim --config FILE` (YAML or JSON) or `startSimTarget({ config })`.
 *
 * Times are in *model milliseconds*; `timeScale` maps them to wall time (wall = model x scale),
 * so tests can run the same physics ten times faster.
 */
export const simConfigSchema = z.object({
  /** Seeds output text, planted spans, jitter: same seed + same prompt => same response. */
  seed: z.number().int().default(42),
  model: z.string().default('fathom-sim-8b'),
  /** wall ms = model ms x timeScale. 1 is real time; 0.1 runs ten times faster. */
  timeScale: z.number().min(0).default(1),
  engine: z
    .object({
      /** Continuous batching: at most this many sequences per step (vLLM max_num_seqs). */
      maxNumSeqs: z.number().int().positive().default(32),
      /** Token budget per step, decode tokens + prefill chunk (vLLM max_num_batched_tokens). */
      maxNumBatchedTokens: z.number().int().positive().default(2048),
      /** KV cache: `numBlocks` pages of `blockSize` tokens (default 65,536 tokens). */
      blockSize: z.number().int().positive().default(16),
      numBlocks: z.number().int().positive().default(4096),
      enablePrefixCaching: z.boolean().default(true),
      maxModelLen: z.number().int().positive().default(8192),
      // Step time (model ms) = stepBaseMs + decodePerSeqMs x decodeSeqs
      //   + prefillPerTokenMs x prefillTokens + attentionPerKTokenMs x contextTokens / 1000.
      // Defaults: ~10 ms per step at batch 1, ~16 ms at batch 32 (a 7-8B model on one A100/H100
      // decodes at 60-100 tok/s per stream); prefill ~40k tok/s.
      stepBaseMs: z.number().min(0).default(10),
      decodePerSeqMs: z.number().min(0).default(0.15),
      prefillPerTokenMs: z.number().min(0).default(0.025),
      attentionPerKTokenMs: z.number().min(0).default(0.05),
    })
    .prefault({}),
  output: z
    .object({
      /** Tokens generated when the request sets no max_tokens (the model's "natural" length). */
      defaultTokens: z.number().int().positive().default(64),
      /** Probability that a response carries a planted hallucinated span. */
      hallucinationRate: z.number().min(0).max(1).default(0.2),
      /** Per-token entropy in bits (spec: facts 2.1 +/- 0.3, hallucinated 4.8 +/- 0.9). */
      groundedEntropyBits: z.number().default(2.1),
      groundedEntropySd: z.number().default(0.3),
      hallucinatedEntropyBits: z.number().default(4.8),
      hallucinatedEntropySd: z.number().default(0.9),
    })
    .prefault({}),
  embeddings: z.object({ dimensions: z.number().int().positive().default(384) }).prefault({}),
  rag: z
    .object({
      /** Vectors pre-loaded into the index at start (synthetic corpus, deterministic). */
      initialIndexSize: z.number().int().min(0).default(10000),
      /** Qdrant-compatible routes: the collection name under which this pre-loaded index is served. */
      collection: z.string().min(1).default('fathom'),
      dimensions: z.number().int().positive().default(64),
      // upsert cost per vector (model ms) = upsertBaseUsPerVector x (1 + size / upsertSlowdownAt) / 1000
      upsertBaseUsPerVector: z.number().min(0).default(4),
      upsertSlowdownAt: z.number().positive().default(100000),
      // retrieve service time (model ms) = retrieveBaseMs + retrievePerKMs x k + retrievePerKVectorsMs x size/1000,
      // x lognormal jitter; `retrieveWorkers` queries run at once, the rest queue. Defaults: 16 concurrent,
      // k=100, 10,000 vectors -> service 45 ms median, P99 ~130 ms in the model (queue + service),
      // 148-178 ms measured over HTTP (issue 3: near the spec's 145 ms retrieve budget).
      retrieveBaseMs: z.number().min(0).default(18),
      retrievePerKMs: z.number().min(0).default(0.12),
      retrievePerKVectorsMs: z.number().min(0).default(1.5),
      retrieveWorkers: z.number().int().positive().default(8),
      retrieveJitterSigma: z.number().min(0).default(0.25),
      /** Rerank: hard cap (spec: semaphore of 32, try-acquire, fail fast). */
      rerankMaxConcurrency: z.number().int().positive().default(32),
      // rerank service time (model ms) = rerankBaseMs + rerankPerDocMs x documents
      rerankBaseMs: z.number().min(0).default(8),
      rerankPerDocMs: z.number().min(0).default(0.6),
    })
    .prefault({}),
  tools: z
    .object({
      /** Main path (v2.1) latency; v1.9 fallback runs slower (spec: 800 ms main, +200 ms fallback timeout). */
      v21LatencyMs: z.number().min(0).default(120),
      v19LatencyMs: z.number().min(0).default(180),
    })
    .prefault({}),
  agents: z
    .object({
      mode: z.enum(['converge', 'oscillate', 'deadlock']).default('converge'),
      stepMs: z.number().min(0).default(20),
    })
    .prefault({}),
  metrics: z
    .object({
      /** true: pre-0.9 names (gpu_cache_usage_perc, time_per_output_token_seconds, no engine label). */
      legacyNames: z.boolean().default(false),
    })
    .prefault({}),
  /** Faults active from start (each may carry durationMs). */
  faults: z.array(faultSpecSchema).default([]),
  /** Ground-truth records kept for GET /sim/requests/:id (oldest dropped first). */
  groundTruthCapacity: z.number().int().positive().default(20000),
});

export type SimConfig = z.infer<typeof simConfigSchema>;
export type SimConfigInput = z.input<typeof simConfigSchema>;
export type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K];
};

/** Parses a (possibly partial) config; throws a ZodError naming the bad field. */
export function resolveSimConfig(input: unknown = {}): SimConfig {
  return simConfigSchema.parse(input ?? {});
}
