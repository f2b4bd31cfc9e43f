import { z } from 'zod';
import { envelopeShape } from '../envelope';
import { MAX_TOOL_CALLS_PER_RECORD, ToolCallObservationSchema } from './tool-call.event';

export const ErrorClassSchema = z.enum([
  'timeout',
  'connect',
  'http-4xx',
  'http-5xx',
  'stream-truncated',
  'malformed-sse',
  /** A non-streamed response body that is not JSON, or not a completion. */
  'malformed-json',
  /** Broken HTTP framing: status line, header, chunk size, an oversized head. */
  'protocol',
  'aborted',
  'other',
]);
export type ErrorClass = z.infer<typeof ErrorClassSchema>;

export const TopLogprobSchema = z.object({ token: z.string(), logprob: z.number() });
export const TokenLogprobSchema = z.object({
  token: z.string(),
  logprob: z.number(),
  top: z.array(TopLogprobSchema),
});
export type TokenLogprob = z.infer<typeof TokenLogprobSchema>;

/**
 * Retrieved documents carried by a RAG record (retrieve and rerank layers), for the
 * semantic-monitor's query/document mismatch (spec, anomaly class 2): the texts of the top
 * documents in rank order, bounded so a record stays small.
 */
export const RETRIEVED_DOCUMENT_LIMITS = {
  /** Top documents kept per record. */
  maxDocuments: 3,
  /** Characters kept per document. */
  maxChars: 512,
} as const;

/**
 * Which part of the load a window or a record belongs to. `index` numbers the sweep's steps (0
 * for a profile without steps); `segment` says whether the request started in the step's
 * warm-up, its measured part, or its cool-down (`load.warmupMs`/`warmupRequests`/`cooldownMs`):
 * only `measured` counts in latency verdicts.
 */
export const LoadPhaseSchema = z.object({
  index: z.number().int().nonnegative(),
  kind: z.enum(['run', 'synchronous', 'throughput', 'rate', 'concurrency']),
  segment: z.enum(['warmup', 'measured', 'cooldown']),
  /** Open-model step: this shard's target rate (req/s). */
  ratePerSec: z.number().nonnegative().optional(),
  /** Closed-model step: this shard's virtual users. */
  concurrency: z.number().int().positive().optional(),
  /** How long this segment has run up to the window's end (ms): its final value is its length. */
  elapsedMs: z.number().nonnegative(),
});
export type LoadPhase = z.infer<typeof LoadPhaseSchema>;
export const LOAD_SEGMENTS = LoadPhaseSchema.shape.segment.options;
export type LoadSegment = LoadPhase['segment'];

/**
 * One request as the load-generator saw it. All times are milliseconds from a monotonic clock;
 * `scheduledAt`/`startedAt` are epoch ms for joining with other sources.
 */
export const RequestRecordSchema = z.object({
  requestId: z.string(),
  /** The server's id for the request (`x-request-id`, or the simulator's `x-sim-request-id`). */
  serverRequestId: z.string().max(200).optional(),
  /** The W3C trace id sent in `traceparent` (32 hex), to find the request in the target's traces. */
  traceId: z.string().max(64).optional(),
  /** Agent loop (`agent-loop` scenario): how the task went, turn by turn. */
  agentLoop: z
    .object({
      turns: z.number().int().nonnegative(),
      /** The model answered without a tool call within maxTurns. */
      finished: z.boolean(),
      /** Tool calls repeating an earlier call of the task (same tool, same arguments). */
      loops: z.number().int().nonnegative(),
      /** Per turn: from its send to its first content or tool-call payload (ms). */
      turnTtftMs: z.array(z.number().nonnegative().nullable()).max(50),
      /** Per executed tool call, in order. */
      toolCalls: z
        .array(z.object({ tool: z.string(), latencyMs: z.number().nonnegative(), ok: z.boolean() }))
        .max(256),
    })
    .optional(),
  /** The sweep step and segment the request started in (absent from older generators). */
  phase: z
    .object({ index: z.number().int().nonnegative(), segment: LoadPhaseSchema.shape.segment })
    .optional(),
  shard: z.number().int().nonnegative(),
  /** When the profile intended the request to start (epoch ms). */
  scheduledAt: z.number(),
  /** When it actually started (epoch ms). */
  startedAt: z.number(),
  /** Time to first token: from actual send to the first chunk with content; null without one. */
  ttftMs: z.number().nonnegative().nullable(),
  /** End to end from actual send. */
  e2eMs: z.number().nonnegative(),
  /**
   * Time per output token (vLLM/GuideLLM): (e2eMs - ttftMs) / (output tokens - 1), output tokens
   * being the server's usage when reported, else the client count; null with fewer than 2 tokens
   * or no first token. Optional: records from older generators lack it.
   */
  tpotMs: z.number().nonnegative().nullable().optional(),
  /** End to end from the intended send time (wrk2's correction for coordinated omission). */
  correctedE2eMs: z.number().nonnegative(),
  /** Offset from send of each content chunk (ms); gaps between them are the inter-token latency. */
  chunkOffsetsMs: z.array(z.number().nonnegative()),
  status: z.number().int(),
  errorClass: ErrorClassSchema.nullable(),
  errorMessage: z.string().optional(),
  /**
   * A refused answer's `Retry-After` header (429, 503) in seconds, an HTTP-date turned into the
   * wait from its receipt. Optional: absent when the answer carried none, and from older generators.
   */
  retryAfterS: z.number().nonnegative().optional(),
  inputTokensClient: z.number().int().nonnegative(),
  outputTokensClient: z.number().int().nonnegative(),
  usage: z
    .object({
      promptTokens: z.number().int().nonnegative(),
      completionTokens: z.number().int().nonnegative(),
      cachedTokens: z.number().int().nonnegative().nullable(),
    })
    .nullable(),
  /** Response text, capped (see load-generator config) so records stay small. */
  content: z.string(),
  finishReason: z.string().nullable(),
  logprobs: z.array(TokenLogprobSchema).optional(),
  /**
   * The prompt as sent (user turn, or the flattened messages), capped like `content`. Optional:
   * the semantic-monitor judges prompt explosion (nesting depth, token surge) only when present.
   */
  prompt: z.string().optional(),
  /**
   * The tool calls inside the request, each with the observed shape of its JSON answer (never the
   * body). Optional: set by the tool-chain and HTTP DAG drivers; older generators lack it.
   */
  toolCalls: z.array(ToolCallObservationSchema).max(MAX_TOOL_CALLS_PER_RECORD).optional(),
  /**
   * RAG retrieve/rerank: the texts of the top retrieved documents, best first (the query is
   * `prompt`), each capped at `RETRIEVED_DOCUMENT_LIMITS.maxChars`. Optional: set by the RAG
   * drivers when the target returns texts; older generators lack it.
   */
  retrievedDocuments: z
    .array(z.string().max(RETRIEVED_DOCUMENT_LIMITS.maxChars))
    .max(RETRIEVED_DOCUMENT_LIMITS.maxDocuments)
    .optional(),
  /**
   * The parent span id sent in `traceparent` with `traceId` (16 hex): the id of Fathom's client span
   * for the request, under which the target's server spans hang. Optional: older generators.
   */
  spanId: z
    .string()
    .regex(/^[0-9a-f]{16}$/)
    .optional(),
});
export type RequestRecord = z.infer<typeof RequestRecordSchema>;

/** Per-request records, batched off the hot path: the campaign's record budget (or fixed recordSampleRate). */
export const RequestTelemetrySchema = z.object({
  ...envelopeShape,
  generatorId: z.string(),
  records: z.array(RequestRecordSchema).min(1),
});
export type RequestTelemetry = z.infer<typeof RequestTelemetrySchema>;

/**
 * The generator's own health over one window: whether the client, not the target, limited it.
 * `loopDelayP99Ms` / `loopUtilization`: event-loop delay (10 ms timer) and utilisation of the
 * engine's thread; `cpuBusy`: the host's CPU busy ratio; `sendLateP99Ms`: actual minus intended
 * send time; `inFlightMax`: the most requests in flight (backlog) against `concurrency`.
 */
export const GeneratorHealthSchema = z.object({
  loopDelayP99Ms: z.number().nonnegative(),
  loopDelayMaxMs: z.number().nonnegative(),
  loopUtilization: z.number().min(0).max(1),
  cpuBusy: z.number().min(0).max(1),
  sendLateP99Ms: z.number().nonnegative(),
  inFlightMax: z.number().int().nonnegative(),
  concurrency: z.number().int().nonnegative(),
  /** The window's E2E P50 (ms; 0 without requests): what a loop delay is weighed against. */
  e2eP50Ms: z.number().nonnegative(),
  /** Per-request records taken per second in this window (what the record budget let through). */
  recordBudgetPerSec: z.number().nonnegative(),
  /**
   * Share of the window the engine's thread was ready to run but waited for a core (other threads
   * of its process, or other processes, held it; Linux schedstat). Absent where not measured.
   */
  coreWaitShare: z.number().min(0).max(1).optional(),
  /** Mean of those waits per time the thread got the core (ms); absent with `coreWaitShare`. */
  coreWaitMeanMs: z.number().nonnegative().optional(),
  /**
   * Share of the window the engine's thread was on a core (Linux schedstat). With `coreWaitShare`,
   * how much of the window it had work: near all of it, it never waited for the target. Absent
   * where not measured (and in windows from generators before it).
   */
  coreRunShare: z.number().min(0).max(1).optional(),
});
export type GeneratorHealth = z.infer<typeof GeneratorHealthSchema>;

/**
 * The primary telemetry stream: one window of one generator's shard, as mergeable HDR
 * histograms (hdr-histogram-js `encodeIntoCompressedBase64`, values in microseconds).
 * Windows from many generators add up exactly; a window is kilobytes however many requests.
 */
export const TelemetryWindowSchema = z.object({
  ...envelopeShape,
  generatorId: z.string(),
  shard: z.number().int().nonnegative(),
  windowStart: z.number(),
  /** Measured length of the window (a late tick makes 1001 ms, a stall seconds). */
  windowMs: z.number().int().positive(),
  /**
   * The length the generator ticks at: windows lie on its grid. Absent from windows stored before
   * it was sent; readers then take the measured lengths' median.
   */
  gridMs: z.number().int().positive().optional(),
  /** Sequence of this window within the generator's shard: lets a consumer spot a gap. */
  seq: z.number().int().nonnegative(),
  requests: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
  errorClasses: z.record(z.string(), z.number().int().nonnegative()),
  dropped: z.number().int().nonnegative(),
  late: z.number().int().nonnegative(),
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  /** The step and segment of the requests it counts (absent from older generators: all measured). */
  phase: LoadPhaseSchema.optional(),
  histogramsUs: z.object({
    e2e: z.string(),
    correctedE2e: z.string(),
    ttft: z.string(),
    itl: z.string(),
    /** Time per output token (vLLM's TPOT) of each request. Optional: older generators lack it. */
    tpot: z.string().optional(),
  }),
  /** The generator's health in this window (absent from older generators). */
  health: GeneratorHealthSchema.optional(),
});
export type TelemetryWindow = z.infer<typeof TelemetryWindowSchema>;

export const GpuSampleSchema = z.object({
  gpu: z.string(),
  instance: z.string().nullable(),
  metric: z.string(),
  value: z.number(),
  unit: z.string(),
});
export type GpuSample = z.infer<typeof GpuSampleSchema>;

/**
 * One scrape of one source. A failed scrape is a gap (`health` not ok, no samples), never zeros.
 */
export const GpuTelemetrySchema = z.object({
  ...envelopeShape,
  source: z.string(),
  url: z.string(),
  scrapedAt: z.number(),
  health: z.enum(['ok', 'down', 'timeout', 'garbage']),
  error: z.string().optional(),
  samples: z.array(GpuSampleSchema),
  /** Consecutive failed scrapes of this source, this one included (0 when ok). */
  consecutiveFailures: z.number().int().nonnegative().optional(),
  /** Delay the collector chose before the next scrape of this source (backoff after a gap). */
  nextScrapeInMs: z.number().nonnegative().optional(),
  /**
   * The collector's own sampling mode (spec: edge sampling). `changed` is true on the event that
   * switched it; in `reduced` mode only essential metrics are kept and scrapes are spaced out.
   */
  sampling: z
    .object({ mode: z.enum(['full', 'reduced']), changed: z.boolean(), reason: z.string() })
    .optional(),
});
export type GpuTelemetry = z.infer<typeof GpuTelemetrySchema>;
