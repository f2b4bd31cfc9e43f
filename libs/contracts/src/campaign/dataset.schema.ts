import { z } from 'zod';

export const ChatMessageSchema = z
  .object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() })
  .strict();

/** A token-length distribution (normal, clipped to [min, max], rounded), drawn with a seed. */
export const TokenLengthSchema = z
  .object({
    mean: z.number().positive(),
    stdev: z.number().min(0).default(0),
    min: z.number().int().positive().default(1),
    max: z.number().int().positive().max(131072),
  })
  .strict()
  .refine((d) => d.min <= d.max && d.mean <= d.max, { message: 'need min <= mean <= max', path: ['max'] });
export type TokenLength = z.infer<typeof TokenLengthSchema>;

/** Which field (JSONL) or column (CSV, by header name) holds what (GuideLLM's data column mapping). */
export const ColumnMappingSchema = z
  .object({
    prompt: z.string().min(1).default('prompt'),
    /** Output length asked for (max_tokens) per row. */
    outputTokens: z.string().min(1).optional(),
    /** A system message per row. */
    system: z.string().min(1).optional(),
    /** Image URL(s) (http(s) or data: URL) sent as `image_url` parts beside the prompt; JSONL may give an array. */
    image: z.string().min(1).optional(),
    /** JSONL only: `{ "data": base64, "format": "wav" | "mp3" }` sent as an `input_audio` part. */
    audio: z.string().min(1).optional(),
  })
  .strict();
export type ColumnMapping = z.infer<typeof ColumnMappingSchema>;

/**
 * Where prompts come from. Files are read (and refused with the line that does not parse) by
 * `@fathom/load` when a shard starts; paths are relative to the generator's working directory.
 */
export const DatasetSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('inline'), prompts: z.array(z.string().min(1)).min(1) }).strict(),
  z
    .object({
      type: z.literal('synthetic'),
      seed: z.number().int().default(1),
      inputTokens: TokenLengthSchema,
      /** Output length asked for per request (max_tokens); the scenario's maxTokens otherwise. */
      outputTokens: TokenLengthSchema.optional(),
      /** Count of distinct prompts drawn before they repeat (bounded memory). */
      size: z.number().int().positive().max(100000).default(1000),
    })
    .strict(),
  z
    .object({
      type: z.literal('jsonl'),
      path: z.string().min(1),
      /** Field of each JSON line that holds the prompt. */
      field: z.string().min(1).default('prompt'),
      /** Instead of `field`: the fields of the prompt, output length and system message. */
      columns: ColumnMappingSchema.optional(),
    })
    .strict(),
  z
    .object({
      /** RFC 4180 CSV with a header row; `columns` names the header of each input. */
      type: z.literal('csv'),
      path: z.string().min(1),
      columns: ColumnMappingSchema.default({ prompt: 'prompt' }),
      delimiter: z.string().length(1).default(','),
    })
    .strict(),
  z
    .object({
      type: z.literal('sharegpt'),
      path: z.string().min(1),
      /** First human turns taken from each conversation (ShareGPT `conversations[].from == human`). */
      maxTurns: z.number().int().positive().default(1),
    })
    .strict(),
  z
    .object({
      /** Sessions of several turns that share a long prefix, to exercise prefix (KV) caching. */
      type: z.literal('multi-turn'),
      seed: z.number().int().default(1),
      sessions: z.number().int().positive().max(10000).default(16),
      turns: z.number().int().positive().max(100).default(4),
      sharedPrefixTokens: z.number().int().min(0).max(65536).default(512),
      turnTokens: TokenLengthSchema,
    })
    .strict(),
]);
export type Dataset = z.infer<typeof DatasetSchema>;

/** Controlled prompt damage (spec: prompt explosion). Quoted strings and comments are never touched. */
export const PromptDamageSchema = z
  .object({
    kind: z.enum(['delimiter-noise', 'punctuation-swap', 'whitespace-compression', 'nesting-amplification']),
    strength: z.number().min(0).max(1),
    seed: z.number().int().default(1),
  })
  .strict();
export type PromptDamage = z.infer<typeof PromptDamageSchema>;

/** KL bound of an adversarial perturbation (spec, hallucination: "KL-bounded (<= 0.15)"). */
export const ADVERSARIAL_MAX_KL = 0.15;

/**
 * Adversarial prompts after entropy peaks (spec, hallucination): each probed prompt is sent once
 * with logprobs, its response's entropy peak found, and 3 to 7 words of the prompt around the
 * peak's anchor replaced by synonyms; only variants whose KL divergence from the original stays
 * within `maxKl` (softmaxed sentence embeddings, see libs/load adversarial-entropy.perturbation.ts) are sent,
 * in the load beside the originals, and the report says whether the hallucination risk moved.
 */
export const AdversarialEntropySchema = z
  .object({
    kind: z.literal('adversarial-entropy'),
    /** Words substituted per variant: at least `min`, at most `max` (spec: 3 to 7 tokens). */
    tokens: z
      .object({
        min: z.number().int().min(1).max(32).default(3),
        max: z.number().int().min(1).max(32).default(7),
      })
      .strict()
      .refine((t) => t.min <= t.max, { message: 'tokens.min must not exceed tokens.max' })
      .default({ min: 3, max: 7 }),
    maxKl: z.number().positive().max(10).default(ADVERSARIAL_MAX_KL),
    /** Candidate variants made per probed prompt (before the KL bound). */
    variants: z.number().int().min(1).max(8).default(4),
    /** Dataset prompts probed, from the first (each costs 1 + kept variants requests up front). */
    prompts: z.number().int().min(1).max(20).default(4),
    /** top_logprobs asked of the probe requests (entropy needs alternatives). */
    topLogprobs: z.number().int().min(2).max(20).default(5),
    seed: z.number().int().default(1),
  })
  .strict();
export type AdversarialEntropy = z.infer<typeof AdversarialEntropySchema>;

export const PerturbationSchema = z.union([PromptDamageSchema, AdversarialEntropySchema]);
export type Perturbation = z.infer<typeof PerturbationSchema>;
