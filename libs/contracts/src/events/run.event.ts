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
});
export type ShardCounts = z.infer<typeof ShardCountsSchema>;

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
});
export type RunLifecycle = z.infer<typeof RunLifecycleSchema>;
