import type { RunShardCommand } from './events/run.event';

/** How long after its planned end a shard command still counts (queueing, slow start). */
export const SHARD_COMMAND_GRACE_MS = 60_000;

/**
 * Services read the shard-command topic from the beginning of what Kafka retains: a consumer
 * that takes over a partition the group never committed on would otherwise start at "latest"
 * and could skip a command published during the rebalance (scaling load-generators out
 * mid-stream). Commands for runs that should already have ended are skipped, so a new group
 * never replays old runs.
 */
export function isStaleShardCommand(command: RunShardCommand, now = Date.now()): boolean {
  return now > command.emittedAt + command.spec.load.durationMs + SHARD_COMMAND_GRACE_MS;
}
