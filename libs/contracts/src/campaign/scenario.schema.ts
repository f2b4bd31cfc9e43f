import { z } from 'zod';
import { DatasetSchema, PerturbationSchema } from './dataset.schema';
import { ToolContractSchema, ToolFallbackSchema } from '../events/tool-call.event';
import { HeadersSchema, RequestPathSchema, SecretSchema } from './secret.schema';

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

/** JSONPath subset used by assertions and WebSocket reply predicates: `$.a.b[0].c`. */
const JsonPathSchema = z
  .string()
  .regex(/^\$(\.[A-Za-z_][\w-]*|\[\d+\])*$/, 'JSONPath of the form $.a.b[0].c');
const JsonScalarSchema = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/**
 * A named semantic assertion on one step's output (spec: semantic orchestrator), e.g.
 * `status == 200 && latency < 150ms && body.contains("success")` is three assertions. What
 * `status` and `body` are depends on the step's kind: HTTP: the status code and the body; gRPC:
 * the gRPC status code (0 = OK) and the response as JSON (server streaming: a JSON array of the
 * messages); WebSocket: 101 once the upgrade succeeded (else the HTTP status that refused it) and
 * the reply frames (one frame: its text; more: a JSON array of them, each parsed when it is JSON).
 */
export const StepAssertionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('status'), name: z.string().min(1), equals: z.number().int() }).strict(),
  z.object({ kind: z.literal('latency'), name: z.string().min(1), belowMs: z.number().positive() }).strict(),
  /** Time to the first message (gRPC stream message, WebSocket frame, HTTP response headers), like TTFT. */
  z
    .object({ kind: z.literal('first-message'), name: z.string().min(1), belowMs: z.number().positive() })
    .strict(),
  z
    .object({
      kind: z.literal('jsonpath'),
      name: z.string().min(1),
      /** Subset of JSONPath: `$.a.b[0].c`. */
      path: JsonPathSchema,
      equals: JsonScalarSchema.optional(),
      exists: z.boolean().optional(),
    })
    .strict(),
  z.object({ kind: z.literal('regex'), name: z.string().min(1), pattern: z.string().min(1) }).strict(),
  z.object({ kind: z.literal('body-contains'), name: z.string().min(1), text: z.string().min(1) }).strict(),
]);
export type StepAssertion = z.infer<typeof StepAssertionSchema>;

/** A step's assertion: inline, or the name of one of the scenario's reusable `assertions`. */
export const StepAssertionUseSchema = z.union([z.string().min(1), StepAssertionSchema]);

/** What every step kind shares: its place in the DAG, its assertions, its own limits. */
const stepShape = {
  name: z
    .string()
    .min(1)
    .regex(/^[\w-]+$/),
  /** Steps that must finish (with every assertion passing) before this one starts. */
  dependsOn: z.array(z.string()).default([]),
  /** Inline assertions, or names of the scenario's reusable `assertions`; tallied as `step.assertion`. */
  assertions: z.array(StepAssertionUseSchema).default([]),
  /**
   * At most this many runs of this step in flight at once across the shard's iterations (a slow
   * or fragile dependency held to its own limit); absent: only `load.concurrency` bounds it.
   */
  concurrency: z.number().int().positive().max(10000).optional(),
  /** The step's own latency budget: a run that takes longer is an SLA miss for the step (report `steps`). */
  budgetMs: z.number().positive().optional(),
};

export const HttpStepSchema = z
  .object({
    /** Absent means `http`. */
    kind: z.literal('http').optional(),
    ...stepShape,
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
    /** Appended to the target's baseUrl; no spaces or control characters (percent-encode them). */
    path: RequestPathSchema,
    headers: HeadersSchema.default({}),
    /** JSON body; sent as-is. */
    body: z.unknown().optional(),
    /** The step calls a tool: its answers are checked against this declared contract (schema drift). */
    contract: ToolContractSchema.optional(),
  })
  .strict();
export type HttpStep = z.infer<typeof HttpStepSchema>;

/**
 * A gRPC call (`@grpc/grpc-js`): unary, or server streaming (each message's arrival is timed; the
 * first is the step's first-message time). Client and bidirectional streaming are refused when the
 * proto is loaded (the shard fails before any load, naming the method).
 */
export const GrpcStepSchema = z
  .object({
    kind: z.literal('grpc'),
    ...stepShape,
    /** `host:port` of the server; absent: the target's host and port. */
    address: z
      .string()
      .regex(/^([\w.-]+|\[[0-9a-fA-F:]+\]):\d{1,5}$/, 'host:port')
      .optional(),
    /** TLS (the system's root certificates); default plaintext (h2c). */
    tls: z.boolean().default(false),
    /** The service's .proto: a file path (imports resolved beside it), or its text inline. */
    proto: z.union([
      z.object({ path: z.string().min(1) }).strict(),
      z.object({ text: z.string().min(1) }).strict(),
    ]),
    /** Fully qualified service name, e.g. `fathom.echo.Echo`. */
    service: z.string().regex(/^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$/, 'package.Service'),
    method: z.string().regex(/^[A-Za-z_]\w*$/),
    /** The request message as JSON (proto field names). */
    request: z.record(z.string(), z.unknown()).default({}),
    /** Call metadata (gRPC's headers); credentials by reference, as for HTTP steps. */
    headers: HeadersSchema.default({}),
  })
  .strict();
export type GrpcStep = z.infer<typeof GrpcStepSchema>;

/**
 * A WebSocket exchange (`ws`): connect, send `send` in order, read frames until the reply is
 * complete (`until`), close. The first frame's arrival is the step's first-message time.
 */
export const WebSocketStepSchema = z
  .object({
    kind: z.literal('websocket'),
    ...stepShape,
    /** `ws://` or `wss://` URL, or a path appended to the target's origin (http -> ws, https -> wss). */
    url: z.union([z.string().regex(/^wss?:\/\/[^\s]+$/, 'ws:// or wss:// URL'), z.string().startsWith('/')]),
    headers: HeadersSchema.default({}),
    /** Frames sent once the connection is open: a string as a text frame, anything else as JSON text. */
    send: z.array(z.unknown()).default([]),
    /**
     * When the reply is complete: after `frames` frames, or at the first frame that is JSON and
     * matches `path` (equal to `equals`, or present when `equals` is absent). A frame that is not
     * JSON fails a predicate wait as `malformed-json`.
     */
    until: z.union([
      z.object({ frames: z.number().int().positive().max(100000) }).strict(),
      z.object({ path: JsonPathSchema, equals: JsonScalarSchema.optional() }).strict(),
    ]),
  })
  .strict();
export type WebSocketStep = z.infer<typeof WebSocketStepSchema>;

export const StepSchema = z.discriminatedUnion('kind', [GrpcStepSchema, WebSocketStepSchema, HttpStepSchema]);
export type Step = z.infer<typeof StepSchema>;

/**
 * What a step's breaker gate and evidence call its path: HTTP its path, gRPC `/service/method`,
 * WebSocket its URL's path.
 */
export function stepRoute(step: Step): string {
  if (step.kind === 'grpc') return `/${step.service}/${step.method}`;
  if (step.kind === 'websocket')
    return step.url.startsWith('/') ? step.url : /^wss?:\/\/[^/?#]*([^?#]*)/.exec(step.url)?.[1] || '/';
  return step.path;
}

/** A step's assertions with the scenario's named ones resolved (names unknown to it are left out). */
export function resolvedAssertions(step: Step, library: readonly StepAssertion[]): StepAssertion[] {
  return step.assertions.flatMap((a) => {
    if (typeof a !== 'string') return [a];
    const found = library.find((l) => l.name === a);
    return found ? [found] : [];
  });
}

/**
 * One iteration runs the whole DAG of steps (HTTP, gRPC, WebSocket); the request record is the
 * iteration. `assertions` are named once and used by name from any step.
 */
export const HttpScenarioSchema = z
  .object({
    type: z.literal('http'),
    /** Reusable named assertions; a step lists a name in its `assertions` to apply one. */
    assertions: z.array(StepAssertionSchema).default([]),
    steps: z.array(StepSchema).min(1).max(100),
  })
  .strict()
  .superRefine((s, ctx) => {
    const library = new Set<string>();
    s.assertions.forEach((a, i) => {
      if (library.has(a.name))
        ctx.addIssue({
          code: 'custom',
          message: `duplicate assertion ${a.name}`,
          path: ['assertions', i, 'name'],
        });
      library.add(a.name);
    });
    const names = new Set<string>();
    s.steps.forEach((step, i) => {
      if (names.has(step.name))
        ctx.addIssue({ code: 'custom', message: `duplicate step ${step.name}`, path: ['steps', i, 'name'] });
      names.add(step.name);
      const applied = new Set<string>();
      step.assertions.forEach((a, j) => {
        const name = typeof a === 'string' ? a : a.name;
        if (typeof a === 'string' && !library.has(a))
          ctx.addIssue({
            code: 'custom',
            message: `unknown assertion ${a}: name one of the scenario's assertions`,
            path: ['steps', i, 'assertions', j],
          });
        if (applied.has(name))
          ctx.addIssue({
            code: 'custom',
            message: `assertion ${name} twice on step ${step.name}`,
            path: ['steps', i, 'assertions', j],
          });
        applied.add(name);
      });
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
 * The assertion names a steps scenario declares, as they are tallied (`step.assertion`), in step
 * order: what assertion coverage is measured against.
 */
export function declaredAssertionNames(scenario: HttpScenario): string[] {
  return scenario.steps.flatMap((step) =>
    resolvedAssertions(step, scenario.assertions).map((a) => `${step.name}.${a.name}`),
  );
}

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
            invokePath: RequestPathSchema,
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
