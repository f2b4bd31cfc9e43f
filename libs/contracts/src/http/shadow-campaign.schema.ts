import { z } from 'zod';
import { ShadowRequestSchema } from '../events/shadow.event';
import { SecretSchema } from '../campaign/secret.schema';
import { RE2JS } from 're2js';

/**
 * What is scrubbed from a production request before it is stored or sent anywhere. Each rule
 * replaces a match with a fixed token, so the three targets still receive the same prompt and
 * its length class barely moves. Every pattern, the built-in detectors and the caller's, runs
 * on RE2 (re2js): linear in the text, so `(a+)+$` cannot stall the orchestrator.
 */
export const RedactionRulesSchema = z
  .object({
    /** Email addresses, non-ASCII ones included (`josé.müller@exämple.de`). */
    emails: z.boolean().default(true),
    /**
     * Credentials: `sk-...` style keys, `Bearer ...`, JWTs, AWS access key ids and secret keys,
     * long hex/base64 runs, `password: ...` phrases, and the value of any field named like a
     * credential (password, secret, token, api_key, authorization).
     */
    keys: z.boolean().default(true),
    /**
     * Runs of 3 or more digits and phone numbers in any grouping (`+44 20 7946 0958`,
     * `(555) 123-4567`), in text and as JSON numbers (sampling parameters are kept).
     */
    numbers: z.boolean().default(true),
    /** Extra patterns (RE2 syntax: no backreferences or lookarounds) and their replacement. */
    patterns: z
      .array(
        z
          .object({
            regex: z
              .string()
              .min(1)
              .max(1000)
              .refine(
                (source) => compiles(source),
                'not a valid RE2 pattern (no backreferences or lookarounds)',
              ),
            replacement: z.string().default('[REDACTED]'),
          })
          .strict(),
      )
      .max(64)
      .default([]),
  })
  .strict();

function compiles(source: string): boolean {
  try {
    RE2JS.compile(source);
    return true;
  } catch {
    return false;
  }
}

export type RedactionRules = z.infer<typeof RedactionRulesSchema>;

/** `apiKey` by reference over the API (see SecretRefSchema); resolved when the campaign runs. */
const TargetSchema = z.object({ baseUrl: z.string().url(), apiKey: SecretSchema.optional() }).strict();

/** A production request as a JSONL line or an inline entry: the body, and optionally its labels. */
export const ShadowLineSchema = ShadowRequestSchema.pick({ body: true, intent: true }).extend({
  endpoint: z.literal('/v1/chat/completions').default('/v1/chat/completions'),
});
export type ShadowLine = z.infer<typeof ShadowLineSchema>;

export const ShadowCampaignInputSchema = z
  .object({
    name: z.string().min(1).max(200),
    /** The version in production. */
    primary: TargetSchema,
    /** Another instance of the primary's version: its disagreement with the primary is the noise. */
    secondary: TargetSchema,
    /** The version under test. */
    candidate: TargetSchema,
    /** Model name sent to all three (overrides the production request's). */
    model: z.string().min(1),
    /**
     * OpenAI-compatible embeddings endpoint for semantic similarity of the three answers. Absent:
     * similarity is not compared (and says so), latency and hallucination risk still are.
     */
    embeddings: z
      .object({ baseUrl: z.string().url(), model: z.string().min(1) })
      .strict()
      .optional(),
    redaction: RedactionRulesSchema.default({ emails: true, keys: true, numbers: true, patterns: [] }),
    source: z.discriminatedUnion('type', [
      z
        .object({ type: z.literal('inline'), requests: z.array(ShadowLineSchema).min(1).max(10_000) })
        .strict(),
      z.object({ type: z.literal('jsonl'), path: z.string().min(1) }).strict(),
      z
        .object({
          /** `fathom.shadow.request.v1`: until maxRequests arrived or durationMs passed. */
          type: z.literal('topic'),
          maxRequests: z.number().int().positive().max(100_000),
          durationMs: z
            .number()
            .int()
            .positive()
            .max(24 * 3600 * 1000),
        })
        .strict(),
      z
        .object({
          /**
           * Always-on: live production traffic, from a `fathom shadow gateway` or a front proxy's
           * mirror (`POST /v1/shadow-campaigns/:id/mirror`) through `fathom.shadow.request.v1`,
           * until the campaign is stopped (`POST /v1/shadow-campaigns/:id/stop`). The report is
           * rolling windows (per `windowMs` and per hour); samples are rotated past `keepSamples`.
           */
          type: z.literal('live'),
          /** Hard cap on requests replayed per second (each goes to the three targets); beyond it they are shed. */
          maxRatePerSec: z.number().positive().max(10_000).default(10),
          /** Share of the offered requests replayed (0..1], seeded by the request id. */
          sampleRate: z.number().gt(0).max(1).default(1),
          /** Rolling window of the live report, ms (60 s: a regression is named within a minute). */
          windowMs: z.number().int().min(1000).max(3_600_000).default(60_000),
          /**
           * Samples kept in storage: once a tenth more (at most 100) were added, the older ones
           * are deleted (window aggregates stay in the report).
           */
          keepSamples: z.number().int().min(10).max(1_000_000).default(10_000),
        })
        .strict(),
    ]),
    /** Requests replayed at once (each goes to the three targets together). */
    concurrency: z.number().int().positive().max(256).default(4),
    maxTokens: z.number().int().positive().max(8192).default(64),
    requestTimeoutMs: z.number().int().positive().default(30_000),
    /**
     * Live campaigns: when the candidate regressed beyond the noise floor in this many windows in
     * a row, the campaign's tier becomes `regressed` and, with `campaignId`, a run of that stored
     * campaign starts (trigger `shadow`), coalesced into an open one as alerts are.
     */
    onRegression: z
      .object({
        windows: z.number().int().min(1).max(60).default(2),
        campaignId: z.string().min(1).optional(),
      })
      .strict()
      .default({ windows: 2 }),
  })
  .strict();
export type ShadowCampaignInput = z.infer<typeof ShadowCampaignInputSchema>;

/**
 * Diffy's method with semantics. Every request is replayed against a primary, a secondary (same
 * version as the primary) and a candidate. The primary-secondary disagreement on a metric is the
 * noise floor: what the service does differently from itself. A candidate difference counts only
 * when it goes beyond that floor. Computed per endpoint and intent.
 */
export interface TargetObservation {
  readonly ok: boolean;
  readonly e2eMs: number;
  readonly ttftMs: number | null;
  /** Share of response tokens inside hallucination-risk segments (entropy from logprobs), 0..1. */
  readonly hallucinationRisk: number | null;
  /**
   * The tool calls of the answer, in order: name and arguments as canonical JSON (keys sorted),
   * or the raw text when the arguments are not JSON. Absent on samples stored before it existed.
   */
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly arguments: string }>;
  /** The answer is a refusal (the API's `refusal` field, or a declining opening). */
  readonly refused?: boolean;
  /**
   * The answer conforms to what the request declared: JSON for `response_format` json_object,
   * its schema for json_schema, each tool call's arguments to that tool's `parameters`. null when
   * the request declared nothing to check.
   */
  readonly schemaValid?: boolean | null;
}

export interface ShadowSample {
  readonly endpoint: string;
  readonly intent: string;
  readonly primary: TargetObservation;
  readonly secondary: TargetObservation;
  readonly candidate: TargetObservation;
  /** Cosine similarity of the response embeddings; null when a response was missing. */
  readonly similarityPrimarySecondary: number | null;
  readonly similarityPrimaryCandidate: number | null;
}

/**
 * Latencies and hallucination risk compare per sample (median candidate - primary against P95
 * |secondary - primary|); the others are rates over the window's samples:
 * `toolCalls` answers whose tool-call names or count differ from the primary's, `toolArguments`
 * answers with the same calls but arguments not JSON-equal, `schemaViolations` and `refusals`
 * the rate minus the primary's.
 */
export type ShadowMetric =
  | 'e2eMs'
  | 'ttftMs'
  | 'dissimilarity'
  | 'hallucinationRisk'
  | 'errorRate'
  | 'toolCalls'
  | 'toolArguments'
  | 'schemaViolations'
  | 'refusals';

export interface MetricComparison {
  readonly metric: ShadowMetric;
  /** P95 of |secondary - primary| (dissimilarity: P95 of 1 - cos(primary, secondary)). */
  readonly noiseFloor: number;
  /** Median of candidate - primary (dissimilarity: median of 1 - cos(primary, candidate)). */
  readonly candidateDifference: number;
  readonly samples: number;
  /**
   * candidateDifference > noiseFloor + the metric's minimum resolution (latencies: or a fifth
   * of the primary's median, whichever is larger).
   */
  readonly beyondNoise: boolean;
}

export interface ShadowGroupReport {
  readonly endpoint: string;
  readonly intent: string;
  readonly samples: number;
  readonly metrics: MetricComparison[];
  /** Only the metrics whose candidate difference is beyond the noise floor. */
  readonly differences: MetricComparison[];
}

/** One rolling window of a live shadow campaign. */
export interface ShadowWindowReport {
  /** Epoch ms. */
  readonly startedAt: number;
  readonly endedAt: number;
  readonly samples: number;
  readonly groups: ShadowGroupReport[];
  /** Some group's candidate is beyond the noise floor on some metric. */
  readonly regressed: boolean;
}

/** Where a live shadow campaign stands: its caps, breaker and windows (bounded lists). */
export interface ShadowLiveStatus {
  /** Requests offered (gateway, mirror, topic) addressed to this campaign. */
  readonly offered: number;
  readonly replayed: number;
  /**
   * Requests not replayed, by why: sampled out, over the rate cap, over the concurrency cap,
   * candidate breaker open, and beyond the probe trickle while the analyzer's breaker on the
   * candidate is open or half-open (absent on campaigns stored before it existed).
   */
  readonly shed: {
    readonly sampled: number;
    readonly rate: number;
    readonly concurrency: number;
    readonly breaker: number;
    readonly analyzerBreaker?: number;
  };
  /** The candidate's breaker: open after consecutive failures, shed for a cool-down, then half-open. */
  readonly candidateBreaker: 'closed' | 'open' | 'half-open';
  /**
   * The analyzer's breaker on the candidate, opened by this campaign's `shadow-regression`
   * signals (a sustained regression) and closed after clean windows as half-open probes: its
   * state and its last 50 changes, oldest first. Absent on campaigns stored before it existed.
   */
  readonly analyzerBreaker?: {
    readonly state: 'closed' | 'open' | 'half-open';
    readonly changes: ReadonlyArray<{
      readonly at: number;
      readonly from: 'closed' | 'open' | 'half-open';
      readonly to: 'closed' | 'open' | 'half-open';
      readonly reason: string;
    }>;
  };
  /** `regressed` once `onRegression.windows` windows in a row regressed; `ok` again after a clean one. */
  readonly tier: 'ok' | 'regressed';
  /** Runs of `onRegression.campaignId` a regression started (or joined, when one was open). */
  readonly linkedRuns: string[];
  /** The last 60 windows, newest last. */
  readonly windows: ShadowWindowReport[];
  /** The last 24 hours, one entry an hour, over a bounded sample of the hour's requests. */
  readonly hours: ShadowWindowReport[];
  /**
   * What a runner taking the campaign over (an orchestrator restarted, or another replica)
   * needs beyond the figures above; absent on reports stored before it existed, which resume
   * without it. Positions are `shadow_samples.seq` values: the database numbers samples as it
   * stores them, so no replica's clock is involved.
   */
  readonly checkpoint?: ShadowLiveCheckpoint;
}

export interface ShadowLiveCheckpoint {
  /** Highest sample seq counted in `windows` (closed windows): the samples after it are the window in progress. */
  readonly windowsSeq: number;
  /** `windowsSeq` when the hour in progress began: the samples after it are the hour's. */
  readonly hourSeq: number;
  /**
   * Highest sample seq counted so far (the window in progress, the candidate breaker below):
   * the candidate outcomes after it are the ones its breaker has not seen.
   */
  readonly lastSeq: number;
  /** The candidate breaker's consecutive failures so far (it opens at 5). */
  readonly candidateFailures: number;
  /**
   * Epoch ms, the wall clock of the orchestrator that opened it, until which the candidate's
   * breaker sheds (then half-open); 0 while closed. Replicas' clocks are assumed NTP-close: a
   * skew of s ms moves a 10 s cool-down by s.
   */
  readonly candidateOpenUntil: number;
}
