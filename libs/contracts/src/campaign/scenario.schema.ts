import { z } from 'zod';
import { DatasetSchema, PerturbationSchema } from './dataset.schema';
import { ToolContractSchema, ToolFallbackSchema } from '../events/tool-call.event';
import { HeadersSchema, SecretSchema } from './secret.schema';

export const TokenizerSpecSchema = z.union([
  z.enum(['o200k_base', 'cl100k_base']),
  z.object({ path: z.string().min(1) }).strict(),
]);
export type TokenizerSpec = z.infer<typeof TokenizerSpecSchema>;

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
    /**
     * `chat` = /chat/completions, `completions` = the legacy /completions endpoint, `responses` =
     * the OpenAI Responses API (/responses; messages as `input`, streamed events parsed alike).
     */
    endpoint: z.enum(['chat', 'completions', 'responses']).default('chat'),
    stream: z.boolean().default(true),
    maxTokens: z.number().int().positive().max(32768).default(64),
    temperature: z.number().min(0).max(2).optional(),
    logprobs: z.boolean().default(false),
    topLogprobs: z.number().int().min(0).max(20).optional(),
    perturbation: PerturbationSchema.optional(),
    /**
     * Tokenizer of the client-side counts and synthetic prompts: `o200k_base` (default) or
     * `cl100k_base` (gpt-tokenizer), or `{ path }` to a Hugging Face `tokenizer.json`.
     */
    tokenizer: TokenizerSpecSchema.optional(),
  })
  .strict()
  .refine((s) => s.prompts !== undefined || s.dataset !== undefined, {
    message: 'give either prompts or dataset',
    path: ['prompts'],
  })
  .refine((s) => s.perturbation?.kind !== 'adversarial-entropy' || s.endpoint === 'chat', {
    message: 'adversarial-entropy probes with /chat/completions logprobs: endpoint must be chat',
    path: ['perturbation'],
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
    headers: HeadersSchema.default({}),
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
            headers: HeadersSchema.default({}),
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
    /**
     * Load granularity (spec, RAG recall avalanche): the dataset's texts cut into `paragraph`s
     * (blank-line separated: few, long texts), `sentence`s, or `token`s (whitespace words: many
     * tiny texts, a pressure probe); absent: the texts as they are. Sent as `x-fathom-granularity`
     * beside `x-fathom-layer` (traffic dyeing per layer and granularity).
     */
    granularity: z.enum(['paragraph', 'sentence', 'token']).optional(),
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
        apiKey: SecretSchema.optional(),
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

/** A tool the model may call in an agent loop; Fathom executes it (a mock answer or an HTTP call). */
export const AgentToolSchema = z
  .object({
    name: z.string().regex(/^[\w-]{1,64}$/),
    description: z.string().max(1000).optional(),
    /** JSON Schema of the arguments, sent to the model as the function's `parameters`. */
    parameters: z.record(z.string(), z.unknown()).default({ type: 'object', properties: {} }),
    /** Fathom answers with this value (JSON) after `latencyMs`. */
    mock: z
      .object({ answer: z.unknown(), latencyMs: z.number().min(0).max(60000).default(0) })
      .strict()
      .optional(),
    /** Fathom POSTs the call's arguments (JSON) to this URL; the response body is the result. */
    http: z
      .object({
        url: z
          .string()
          .url()
          .regex(/^https?:/),
        timeoutMs: z.number().int().positive().default(10000),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine((t) => (t.mock === undefined) !== (t.http === undefined), {
    message: 'give exactly one of mock or http',
  });
export type AgentTool = z.infer<typeof AgentToolSchema>;

/**
 * A tool-calling agent loop against any OpenAI-compatible server: each iteration gives the model a
 * task and the declared tools; Fathom executes the calls the model makes, feeds the results back,
 * and repeats until the model answers without a tool call or `maxTurns` is reached. The record
 * says the turns, each turn's TTFT, each tool's latency and the repeated calls (loops).
 */
export const AgentLoopScenarioSchema = z
  .object({
    type: z.literal('agent-loop'),
    model: z.string().min(1).optional(),
    /** The user tasks, cycled through. */
    tasks: z.array(z.string().min(1)).min(1),
    system: z.string().optional(),
    tools: z.array(AgentToolSchema).min(1).max(32),
    maxTurns: z.number().int().min(1).max(50).default(8),
    maxTokens: z.number().int().positive().max(32768).default(256),
    temperature: z.number().min(0).max(2).optional(),
  })
  .strict()
  .refine((s) => new Set(s.tools.map((t) => t.name)).size === s.tools.length, {
    message: 'duplicate tool name',
    path: ['tools'],
  });
export type AgentLoopScenario = z.infer<typeof AgentLoopScenarioSchema>;

export const ScenarioSchema = z.discriminatedUnion('type', [
  AgentLoopScenarioSchema,
  RagScenarioSchema,
  AgentsScenarioSchema,
  ChatScenarioSchema,
  EmbeddingsScenarioSchema,
  HttpScenarioSchema,
  ToolChainScenarioSchema,
]);
export type Scenario = z.infer<typeof ScenarioSchema>;
