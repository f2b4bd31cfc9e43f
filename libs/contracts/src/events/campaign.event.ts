import { z } from 'zod';
import { SemanticSpecSchema } from './semantic.config';
import { ToolContractSchema, ToolFallbackSchema } from './tool-call.event';

/** The tier a run is in when no tier's objectives hold (reserved: no user tier may be named so). */
export const SLO_BREACH_TIER = 'SLO-breach';

export const LatencyMetricNameSchema = z.enum(['e2e', 'correctedE2e', 'ttft', 'itl']);
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
    maxErrorRate: z.number().min(0).max(1).optional(),
    /**
     * The tiers the analyzer judges this campaign's runs against, best first; absent: the spec's
     * SLO-0 and SLO-1. Tier changes are published with these names.
     */
    tiers: SloTiersSchema.optional(),
  })
  .strict();
export type SloThresholds = z.infer<typeof SloThresholdsSchema>;

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
export const PerturbationSchema = z
  .object({
    kind: z.enum(['delimiter-noise', 'punctuation-swap', 'whitespace-compression', 'nesting-amplification']),
    strength: z.number().min(0).max(1),
    seed: z.number().int().default(1),
  })
  .strict();
export type Perturbation = z.infer<typeof PerturbationSchema>;

export const ChatScenarioSchema = z
  .object({
    type: z.literal('chat'),
    /** Model id; absent: the first model the target lists at `/v1/models`. */
    model: z.string().min(1).optional(),
    /** Prompts cycled through in order; each is one user turn (system message optional). */
    prompts: z.array(z.string().min(1)).min(1).optional(),
    /** Instead of `prompts`: a dataset (synthetic, JSONL, ShareGPT, multi-turn). */
    dataset: DatasetSchema.optional(),
    system: z.string().optional(),
    /** `chat` = /chat/completions, `completions` = the legacy /completions endpoint. */
    endpoint: z.enum(['chat', 'completions']).default('chat'),
    stream: z.boolean().default(true),
    maxTokens: z.number().int().positive().max(32768).default(64),
    temperature: z.number().min(0).max(2).optional(),
    logprobs: z.boolean().default(false),
    topLogprobs: z.number().int().min(0).max(20).optional(),
    perturbation: PerturbationSchema.optional(),
  })
  .strict()
  .refine((s) => s.prompts !== undefined || s.dataset !== undefined, {
    message: 'give either prompts or dataset',
    path: ['prompts'],
  });
export type ChatScenario = z.infer<typeof ChatScenarioSchema>;

export const EmbeddingsScenarioSchema = z
  .object({
    type: z.literal('embeddings'),
    /** Model id; absent: the first model the target lists at `/v1/models`. */
    model: z.string().min(1).optional(),
    /** Texts embedded per request (the batch), drawn from the dataset in order. */
    batchSize: z.number().int().positive().max(2048).default(1),
    dataset: DatasetSchema,
  })
  .strict();
export type EmbeddingsScenario = z.infer<typeof EmbeddingsScenarioSchema>;

/**
 * A named semantic assertion on one step's response (spec: semantic orchestrator), e.g.
 * `status == 200 && latency < 150ms && body.contains("success")` is three assertions.
 */
export const StepAssertionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('status'), name: z.string().min(1), equals: z.number().int() }).strict(),
  z.object({ kind: z.literal('latency'), name: z.string().min(1), belowMs: z.number().positive() }).strict(),
  z
    .object({
      kind: z.literal('jsonpath'),
      name: z.string().min(1),
      /** Subset of JSONPath: `$.a.b[0].c`. */
      path: z.string().regex(/^\$(\.[A-Za-z_][\w-]*|\[\d+\])*$/, 'JSONPath of the form $.a.b[0].c'),
      equals: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional(),
      exists: z.boolean().optional(),
    })
    .strict(),
  z.object({ kind: z.literal('regex'), name: z.string().min(1), pattern: z.string().min(1) }).strict(),
  z.object({ kind: z.literal('body-contains'), name: z.string().min(1), text: z.string().min(1) }).strict(),
]);
export type StepAssertion = z.infer<typeof StepAssertionSchema>;

export const HttpStepSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .regex(/^[\w-]+$/),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
    /** Appended to the target's baseUrl. */
    path: z.string().startsWith('/'),
    headers: z.record(z.string(), z.string()).default({}),
    /** JSON body; sent as-is. */
    body: z.unknown().optional(),
    /** Steps that must finish (with every assertion passing) before this one starts. */
    dependsOn: z.array(z.string()).default([]),
    assertions: z.array(StepAssertionSchema).default([]),
    /** The step calls a tool: its answers are checked against this declared contract (schema drift). */
    contract: ToolContractSchema.optional(),
  })
  .strict();
export type HttpStep = z.infer<typeof HttpStepSchema>;

/** One iteration runs the whole DAG of steps; the request record is the iteration. */
export const HttpScenarioSchema = z
  .object({ type: z.literal('http'), steps: z.array(HttpStepSchema).min(1).max(100) })
  .strict()
  .superRefine((s, ctx) => {
    const names = new Set<string>();
    s.steps.forEach((step, i) => {
      if (names.has(step.name))
        ctx.addIssue({ code: 'custom', message: `duplicate step ${step.name}`, path: ['steps', i, 'name'] });
      names.add(step.name);
    });
    s.steps.forEach((step, i) =>
      step.dependsOn.forEach((dep, j) => {
        if (!names.has(dep))
          ctx.addIssue({
            code: 'custom',
            message: `unknown step ${dep}`,
            path: ['steps', i, 'dependsOn', j],
          });
      }),
    );
    const byName = new Map(s.steps.map((step) => [step.name, step]));
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (name: string): boolean => {
      if (state.get(name) === 'done') return true;
      if (state.get(name) === 'visiting') return false;
      state.set(name, 'visiting');
      const ok = (byName.get(name)?.dependsOn ?? []).every((d) => !byName.has(d) || visit(d));
      state.set(name, 'done');
      return ok;
    };
    s.steps.forEach((step, i) => {
      if (!visit(step.name))
        ctx.addIssue({ code: 'custom', message: 'steps form a cycle', path: ['steps', i, 'dependsOn'] });
    });
  });
export type HttpScenario = z.infer<typeof HttpScenarioSchema>;

/**
 * Tool-call chains: the model asks for a tool, Fathom calls it over HTTP, feeds the result back,
 * for up to `maxSteps` model calls; one iteration is the whole chain.
 */
export const ToolChainScenarioSchema = z
  .object({
    type: z.literal('tool-chain'),
    /** Model id; absent: the first model the target lists at `/v1/models`. */
    model: z.string().min(1).optional(),
    prompts: z.array(z.string().min(1)).min(1),
    maxTokens: z.number().int().positive().max(32768).default(64),
    maxSteps: z.number().int().min(1).max(20).default(4),
    tools: z
      .array(
        z
          .object({
            name: z.string().regex(/^[\w-]{1,64}$/),
            description: z.string().default(''),
            /** JSON Schema of the arguments, as sent to the model. */
            parameters: z.record(z.string(), z.unknown()).default({ type: 'object', properties: {} }),
            /** Where Fathom POSTs the model's arguments (appended to the target's origin). */
            invokePath: z.string().startsWith('/'),
            headers: z.record(z.string(), z.string()).default({}),
            /** Declared response contract: answers are checked against it (schema drift). */
            contract: ToolContractSchema.optional(),
            /** Main-path timeout of one call (spec: 800 ms); absent: only the request timeout. */
            timeoutMs: z.number().int().positive().optional(),
            /** Called instead when the main call times out, answers 5xx or breaks its contract. */
            fallback: ToolFallbackSchema.optional(),
          })
          .strict(),
      )
      .min(1),
  })
  .strict();
export type ToolChainScenario = z.infer<typeof ToolChainScenarioSchema>;

/**
 * One RAG layer loaded in isolation (spec: index, retrieval, rerank tested apart, with traffic
 * dyeing). Texts come from the dataset; paths are appended to the target's origin (defaults: the
 * simulated target's `/rag/*` endpoints).
 */
export const RagScenarioSchema = z
  .object({
    type: z.literal('rag'),
    layer: z.enum(['index', 'retrieve', 'rerank']),
    dataset: DatasetSchema,
    /** index: vectors per upsert; rerank: documents per request. */
    batchSize: z.number().int().positive().max(100000).default(16),
    /** retrieve: top-k (spec: top-100 ANN query). */
    k: z.number().int().positive().max(1000).default(100),
    path: z.string().startsWith('/').optional(),
    /**
     * index/retrieve through `@qdrant/js-client-rest` (a Qdrant node, or the simulated target's
     * Qdrant-compatible routes) instead of the `/rag/*` HTTP shape. Texts become vectors on the
     * client (a seeded hash embedding of the collection's size): the layer under test is the store,
     * not an embedding model.
     */
    qdrant: z
      .object({
        /** Qdrant's REST address, e.g. http://127.0.0.1:6333; absent: the target's origin. */
        url: z.string().url().optional(),
        apiKey: z.string().optional(),
        collection: z.string().min(1).default('fathom'),
        /** Created before the load starts when it does not exist (Qdrant: one dense vector). */
        create: z
          .object({
            size: z.number().int().positive().max(65536),
            distance: z.enum(['Cosine', 'Dot']).default('Cosine'),
          })
          .strict()
          .optional(),
        /** retrieve: `query` (POST points/query) or the older `search` (POST points/search). */
        api: z.enum(['query', 'search']).default('query'),
        /** index: wait for the upsert to be applied (Qdrant's `wait`), so latency includes it. */
        wait: z.boolean().default(true),
        withPayload: z.boolean().default(false),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine((s) => s.qdrant === undefined || s.layer !== 'rerank', {
    message: 'Qdrant has no rerank layer: qdrant applies to index and retrieve',
    path: ['qdrant'],
  });
export type RagScenario = z.infer<typeof RagScenarioSchema>;

/**
 * A multi-agent workflow (the simulated target's `POST /agents/run` shape, streamed as NDJSON):
 * one iteration is one whole run of `agents` agents for up to `steps` steps. Per-step latency is
 * the arrival of each step (the record's chunk offsets; TTFT is the time to the first step), and
 * the target's outcome (completed / incomplete / oscillating / deadlock) is the record's
 * finishReason and the `workflow.*` assertions; anything but completed is an `other` error.
 */
export const AgentsScenarioSchema = z
  .object({
    type: z.literal('agents'),
    /** Appended to the target's origin. */
    path: z.string().startsWith('/').default('/agents/run'),
    agents: z.number().int().min(2).max(64).default(3),
    steps: z.number().int().min(1).max(1000).default(12),
    /** When set: the `workflow.step-latency` assertion (every gap between steps below this). */
    stepBudgetMs: z.number().positive().optional(),
  })
  .strict();
export type AgentsScenario = z.infer<typeof AgentsScenarioSchema>;

export const ScenarioSchema = z.discriminatedUnion('type', [
  RagScenarioSchema,
  AgentsScenarioSchema,
  ChatScenarioSchema,
  EmbeddingsScenarioSchema,
  HttpScenarioSchema,
  ToolChainScenarioSchema,
]);
export type Scenario = z.infer<typeof ScenarioSchema>;

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
      /** GuideLLM's sweep: synchronous, throughput, then `rates` constant rates in between. */
      type: z.literal('sweep'),
      seed,
      rates: z.number().int().min(1).max(50).default(5),
      ...openModelShape,
    })
    .strict(),
  z
    .object({
      type: z.literal('replay'),
      seed,
      /** JSONL with `{"timestampMs": n, "prompt"?: s}` per line, or an OTLP/JSON trace export. */
      path: z.string().min(1),
      format: z.enum(['jsonl', 'otel']).default('jsonl'),
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
        durationMs: z
          .number()
          .int()
          .positive()
          .max(24 * 3600 * 1000),
        /** Per-request timeout; a request that exceeds it is classified `timeout`. */
        requestTimeoutMs: z.number().int().positive().default(30000),
        /** Fraction of per-request records published besides the histograms (1 = all). */
        recordSampleRate: z.number().min(0).max(1).default(1),
        /** Number of shards the plan is cut into for load-generators in a consumer group. */
        shards: z.number().int().positive().max(256).default(1),
        /** When requests start. Absent means `closed` with `concurrency` users (the original shape). */
        profile: LoadProfileSchema.optional(),
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
        if (p && 'ratePerSec' in p && p.ratePerSec > 1_000_000)
          ctx.addIssue({ code: 'custom', message: 'rate above 1e6/s', path: ['profile', 'ratePerSec'] });
      }),
    slo: SloThresholdsSchema.default({}),
    reruns: TierRerunPolicySchema.default({ maxReruns: 1, cooldownMs: 5000 }),
    /** Semantic checks beyond the defaults: drift and intent accuracy against a baseline run. */
    semantic: SemanticSpecSchema.optional(),
  })
  .strict();
export type CampaignSpec = z.infer<typeof CampaignSpecSchema>;
export type CampaignSpecInput = z.input<typeof CampaignSpecSchema>;
