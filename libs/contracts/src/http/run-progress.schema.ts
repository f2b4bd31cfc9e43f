import { z } from 'zod';
import { BreakerStateSchema } from '../events/state.event';

const LatencyPairSchema = z.object({
  /** Milliseconds; null before the first response. */
  p50Ms: z.number().nullable(),
  p99Ms: z.number().nullable(),
});

/**
 * A running (or ended) run as its telemetry stands: the body of `GET /v1/runs/:id/progress`
 * and what `fathom run` shows while it waits. Latencies and counts cover every window so far;
 * `requestsPerSec` the newest 5 s of windows, all generators together.
 */
export const RunProgressSchema = z.object({
  runId: z.string(),
  status: z.string(),
  /** Epoch ms the run started; null while pending. */
  startedAt: z.number().nullable(),
  elapsedMs: z.number().nonnegative(),
  /** Planned duration left; null when the plan is unknown. */
  remainingMs: z.number().nonnegative().nullable(),
  requests: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
  errorClasses: z.record(z.string(), z.number()),
  requestsPerSec: z.number().nonnegative(),
  e2e: LatencyPairSchema,
  ttft: LatencyPairSchema,
  /** The analyzer's current SLO tier; null before its first evaluation. */
  tier: z.string().nullable(),
  /** Breakers not closed, named `target/layer/node`. */
  openBreakers: z.array(z.object({ breaker: z.string(), state: BreakerStateSchema.exclude(['closed']) })),
  validity: z.object({
    /** The measurement-validity verdict on the windows so far (token counts are judged at the end). */
    valid: z.boolean(),
    reasons: z.array(z.string()),
    late: z.number().int().nonnegative(),
    dropped: z.number().int().nonnegative(),
    /** (late + dropped) / iterations: the generator-bottleneck figure (above 5 %: invalid). */
    behindShare: z.number().min(0).max(1),
  }),
});
export type RunProgress = z.infer<typeof RunProgressSchema>;
