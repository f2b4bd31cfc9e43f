import { z } from 'zod';

/**
 * Fault kinds the target can plant, each from config at start or `POST /sim/faults` at run time.
 * `durationMs` (optional) clears the fault by itself; without it the fault stays until
 * `DELETE /sim/faults/:kind`.
 */
const base = { durationMs: z.number().positive().optional() };

export const faultSpecSchema = z.discriminatedUnion('kind', [
  /** Every engine step takes `addMs` model ms longer: TTFT and inter-token latency rise. */
  z.object({ kind: z.literal('latency_spike'), addMs: z.number().min(0).default(50), ...base }),
  /** KV cache keeps only `fraction` of its blocks: saturation, waiting and preemption at lower load. */
  z.object({ kind: z.literal('kv_shrink'), fraction: z.number().gt(0).max(1).default(0.1), ...base }),
  /** Streams pause for `stallMs` (wall) after `afterTokens` tokens, then resume. */
  z.object({
    kind: z.literal('stream_stall'),
    afterTokens: z.number().int().min(0).default(8),
    stallMs: z.number().min(0).default(2000),
    ...base,
  }),
  /** Streams are cut (socket destroyed, no finish chunk, no [DONE]) after `afterTokens` tokens. */
  z.object({ kind: z.literal('stream_truncate'), afterTokens: z.number().int().min(0).default(8), ...base }),
  /** With probability `rate`, a broken SSE event is written before a chunk (the chunk still follows). */
  z.object({ kind: z.literal('malformed_sse'), rate: z.number().min(0).max(1).default(0.2), ...base }),
  /** With probability `rate`, completion/RAG/tool requests fail at once with `status`. */
  z.object({
    kind: z.literal('http_5xx'),
    rate: z.number().min(0).max(1).default(1),
    status: z.union([z.literal(500), z.literal(502), z.literal(503)]).default(503),
    ...base,
  }),
  /**
   * With probability `rate`, completion requests are refused at once with 429 and a
   * `Retry-After: retryAfterS` header, as a quota-limited API answers.
   */
  z.object({
    kind: z.literal('rate_limit'),
    rate: z.number().min(0).max(1).default(1),
    retryAfterS: z.number().int().min(0).default(2),
    ...base,
  }),
  /** Tool contracts drift: a field changes type, a required field is added, or one is dropped. */
  z.object({
    kind: z.literal('schema_drift'),
    mode: z.enum(['type_change', 'required_added', 'required_dropped']).default('type_change'),
    tool: z.string().optional(),
    ...base,
  }),
  /**
   * Chat completions' tool-call arguments drift from the tool's declared `parameters`: a value
   * of another type (`type_change`), the first required argument left out (`required_dropped`),
   * or an undeclared argument added (`extra_argument`). `tool` limits it to one tool.
   */
  z.object({
    kind: z.literal('tool_call_drift'),
    mode: z.enum(['type_change', 'required_dropped', 'extra_argument']).default('type_change'),
    tool: z.string().optional(),
    ...base,
  }),
  /**
   * With probability `rate` (drawn per request and the target's seed), chat completions decline
   * as OpenAI's models do: the message's `refusal` text with `content: null` (streamed: a
   * `delta.refusal` chunk per token), no tool call, finish reason `stop`.
   */
  z.object({ kind: z.literal('refusal_rate'), rate: z.number().min(0).max(1).default(1), ...base }),
  /** Overrides the share of responses carrying a planted hallucinated span. */
  z.object({ kind: z.literal('hallucination_rate'), rate: z.number().min(0).max(1).default(1), ...base }),
  /** `inUse` of the reranker's slots are held by phantom work: busy 503s at lower load. */
  z.object({ kind: z.literal('reranker_saturation'), inUse: z.number().int().min(0).default(32), ...base }),
  /** Completion responses trickle out at `bytesPerSecond`. */
  z.object({ kind: z.literal('slow_loris'), bytesPerSecond: z.number().positive().default(200), ...base }),
  /** Agents' plans flip between two intents every step and never settle. */
  z.object({ kind: z.literal('agent_oscillation'), ...base }),
  /** Agents each hold one resource and wait for the next one's: circular wait. */
  z.object({ kind: z.literal('agent_deadlock'), ...base }),
]);

export type FaultSpecInput = z.input<typeof faultSpecSchema>;
export type FaultSpec = z.infer<typeof faultSpecSchema>;
export type FaultKind = FaultSpec['kind'];
export type FaultOf<K extends FaultKind> = Extract<FaultSpec, { kind: K }>;

export const FAULT_KINDS: readonly FaultKind[] = faultSpecSchema.options.map((o) => o.shape.kind.value);
