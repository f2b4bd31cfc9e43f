import type { RunLifecycle, RunTelemetryCompleteness, TelemetryWindow } from '@fathom/contracts';

/** A shard that started and never ended, as the analyzer last heard of it. */
export type MissingShard = RunTelemetryCompleteness['shardsMissing'][number];

/**
 * How much of what the generators sent the stored windows hold. A generator's shard-end counts
 * are exact (`sent`: every request it accounted, success or error); a window lost on the way
 * (broker down past the publisher's patience) leaves its requests out of the merge, and the
 * difference says how many. Shards without an end are listed apart: nobody counted them.
 */
export function telemetryCompleteness(
  lifecycle: readonly RunLifecycle[],
  windows: readonly TelemetryWindow[],
  missingShards: readonly MissingShard[],
): RunTelemetryCompleteness {
  const ended = new Map<string, number>();
  for (const l of lifecycle) {
    // Summaries rebuilt from hand-made evidence may hold lifecycle events without a shard.
    if (l.phase === 'shard-started' || l.shard === undefined) continue;
    ended.set(`${l.generatorId}/${l.shard.index}`, l.counts.sent);
  }
  let measured = 0;
  for (const w of windows) if (ended.has(`${w.generatorId}/${w.shard}`)) measured += w.requests;
  let counted = 0;
  for (const sent of ended.values()) counted += sent;
  return {
    requestsCounted: counted,
    requestsMissing: Math.max(0, counted - measured),
    shardsMissing: [...missingShards].sort((a, b) => a.index - b.index),
  };
}

/** The reason a partial run gives: which shards went silent, and since when. */
export function missingShardsReason(missing: readonly MissingShard[], shardCount: number | null): string {
  return missing
    .map(
      (s) =>
        `shard ${s.index}${shardCount ? ` of ${shardCount}` : ''}` +
        (s.generatorId ? ` (generator ${s.generatorId})` : ' (never started)') +
        (s.lastSeenAt !== null ? ` stopped reporting at ${new Date(s.lastSeenAt).toISOString()}` : '') +
        ' before its shard ended: its requests after its last stored window are not measured',
    )
    .join('; ');
}
