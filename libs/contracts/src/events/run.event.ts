import { z } from 'zod';
import { envelopeShape } from '../envelope';
import { CampaignSpecSchema } from '../campaign/campaign.schema';

/**
 * `partial`: the run ended but a shard's generator stopped reporting before its end (killed, or
 * cut off): the summary holds what was measured, and its reason names the shards missing.
 */
export const RunStatusSchema = z.enum(['pending', 'running', 'completed', 'partial', 'failed', 'aborted']);
export type RunStatus = z.infer<typeof RunStatusSchema>;

export const RunTriggerSchema = z.enum(['api', 'cli', 'rerun', 'schedule', 'alert', 'demo', 'shadow']);
export type RunTrigger = z.infer<typeof RunTriggerSchema>;

/**
 * One shard of a run's load plan, for the load-generators' consumer group: each generator takes
 * the shards its partitions hold. Shard i of n runs ceil/floor(concurrency / n) virtual users.
 */
export const RunShardCommandSchema = z.object({
  ...envelopeShape,
  kind: z.literal('start-shard'),
  shard: z.object({ index: z.number().int().nonnegative(), count: z.number().int().positive() }),
  spec: CampaignSpecSchema,
  trigger: RunTriggerSchema,
});
export type RunShardCommand = z.infer<typeof RunShardCommandSchema>;

/** Broadcast to every load-generator (each reads it in its own group): stop this run's load now. */
export const RunControlSchema = z.object({
  ...envelopeShape,
  kind: z.literal('abort'),
  reason: z.string(),
});
export type RunControl = z.infer<typeof RunControlSchema>;

const count = z.number().int().nonnegative();

export const AssertionTallySchema = z.object({ passed: count, failed: count });
export type AssertionTally = z.infer<typeof AssertionTallySchema>;

/** One step of a steps scenario over a shard (latencies in ms; sums so that shards add up). */
export const StepTallySchema = z.object({
  /** Runs that were sent (their dependencies passed). */
  runs: count,
  /** Of those, runs that failed (transport, status, or an assertion). */
  failed: count,
  /** Iterations that skipped the step because a dependency failed. */
  skipped: count,
  /** Runs slower than the step's `budgetMs` (its own SLA); 0 without a budget. */
  slaMisses: count,
  latencyMsSum: z.number().nonnegative(),
  latencyMsMax: z.number().nonnegative(),
  /** Runs that received a first message (gRPC message, WebSocket frame, HTTP headers), and their sum. */
  firstMessages: count,
  firstMessageMsSum: z.number().nonnegative(),
  /** Messages received (gRPC stream messages, WebSocket frames; 1 per HTTP answer). */
  messages: count,
});
export type StepTally = z.infer<typeof StepTallySchema>;

export const ShardCountsSchema = z.object({
  sent: z.number().int().nonnegative(),
  completed: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
  /** Iterations an open-model profile could not start in time (k6's dropped iterations). */
  dropped: z.number().int().nonnegative(),
  /** Per-request records published on the request topic (after sampling). */
  recordsPublished: z.number().int().nonnegative(),
  /** Histogram windows published on the window topic. */
  windowsPublished: z.number().int().nonnegative(),
  /**
   * Named assertions tallied over the shard (`step.assertion`, `workflow.*`, `tool.*`): how many
   * times each passed and failed. Absent from generators made before, and before the shard ended.
   */
  assertions: z.record(z.string(), AssertionTallySchema).optional(),
  /** Steps scenarios: each step's runs, failures, skips, SLA misses and latency over the shard. */
  steps: z.record(z.string(), StepTallySchema).optional(),
});
export type ShardCounts = z.infer<typeof ShardCountsSchema>;

/** Hallucination-risk figures of one response (libs/semantic assessHallucinationRisk). */
export const RiskFigureSchema = z.object({
  status: z.enum(['ok', 'no-logprobs', 'no-top-logprobs']),
  /** Highest sliding-window mean entropy, bits; null without logprobs. */
  maxWindowMeanBits: z.number().nullable(),
  meanEntropyBits: z.number().nullable(),
  /** Hallucination-risk segments found. */
  segments: z.number().int().nonnegative(),
});
export type RiskFigure = z.infer<typeof RiskFigureSchema>;

/** Bounds that keep a lifecycle event small (prompt texts are capped, lists bounded). */
// Worst case about 20 x (400 + 8 x ~1,000) chars: well under a bus message's 1 MB.
export const ADVERSARIAL_LIMITS = { promptChars: 400, prompts: 20, variants: 8, substitutions: 32 } as const;

/** One perturbed variant of a probed prompt: its KL, whether it was kept (sent) and its risk. */
export const AdversarialVariantSchema = z.object({
  text: z.string().max(ADVERSARIAL_LIMITS.promptChars),
  /** Words replaced, in prompt order: `word -> replacement`. */
  substitutions: z.array(z.string().max(80)).max(ADVERSARIAL_LIMITS.substitutions),
  kl: z.number().nonnegative(),
  /** kl <= maxKl: the variant went into the load; otherwise it was never sent. */
  kept: z.boolean(),
  /** The kept variant's own probe response; null when dropped or its probe failed. */
  after: RiskFigureSchema.nullable(),
  /** after.maxWindowMeanBits - before.maxWindowMeanBits; null without both. */
  deltaBits: z.number().nullable(),
  /** Whether the response went from having risk segments to none or back; null without both. */
  riskMoved: z.boolean().nullable(),
  /** Why `after` is missing although kept (the probe request failed). */
  error: z.string().optional(),
});
export type AdversarialVariant = z.infer<typeof AdversarialVariantSchema>;

/** One probed prompt of an `adversarial-entropy` perturbation (spec, hallucination). */
export const AdversarialProbeSchema = z.object({
  shard: z.number().int().nonnegative(),
  promptIndex: z.number().int().nonnegative(),
  prompt: z.string().max(ADVERSARIAL_LIMITS.promptChars),
  /** `skipped`: nothing was perturbed (`reason` says why). */
  status: z.enum(['ok', 'skipped']),
  reason: z.string().optional(),
  /** The original response's entropy peak: token position, token and its window mean. */
  peak: z
    .object({ position: z.number().int().nonnegative(), token: z.string(), windowMeanBits: z.number() })
    .nullable(),
  /** Word index in the prompt the substitutions cluster around. */
  anchorWord: z.number().int().nonnegative().nullable(),
  before: RiskFigureSchema.nullable(),
  variants: z.array(AdversarialVariantSchema).max(ADVERSARIAL_LIMITS.variants),
});
export type AdversarialProbe = z.infer<typeof AdversarialProbeSchema>;

/** Lifecycle of one shard, from the load-generator that runs it. */
export const RunLifecycleSchema = z.object({
  ...envelopeShape,
  phase: z.enum(['shard-started', 'shard-finished', 'shard-failed']),
  shard: z.object({ index: z.number().int().nonnegative(), count: z.number().int().positive() }),
  generatorId: z.string(),
  counts: ShardCountsSchema,
  reason: z.string().optional(),
  /**
   * Why the shard's load ended: its duration ran out, it was aborted, or the campaign's SLO failed
   * with `slo.abortOnFail` (k6's abortOnFail; `reason` then names the failed thresholds).
   */
  endReason: z.enum(['duration', 'aborted', 'slo-failed']).optional(),
  /** `perturbation: adversarial-entropy`: what this shard probed before its load (finished shards). */
  adversarial: z.array(AdversarialProbeSchema).max(ADVERSARIAL_LIMITS.prompts).optional(),
});
export type RunLifecycle = z.infer<typeof RunLifecycleSchema>;
