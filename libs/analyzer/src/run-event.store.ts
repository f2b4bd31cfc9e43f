import type { RunEventRecord, RunEventRepository } from '@fathom/storage';
import {
  Topics,
  expandTokenStats,
  type TokenStatsBatchSignal,
  type TokenStatsSignal,
  type CampaignSpec,
  type DetectorSignal,
  type GpuTelemetry,
  type RunShardCommand,
  type SemanticSignal,
  type SloTierChange,
  type TelemetryWindow,
} from '@fathom/contracts';
import { RunTimeline, type RecordDigest } from '@fathom/analysis';

/** `token-stats` apart from the other semantic signals: the settle check counts them against the records published. */
export type StoredKind =
  | 'shard-command'
  | 'window'
  | 'lifecycle'
  | 'token-stats'
  | 'semantic'
  | 'gpu'
  | 'tier'
  | 'tier-published'
  | 'digest'
  | 'breaker'
  | 'cause';

/** Stored after a tier change was published (the change itself is stored before publishing). */
export type TierPublished = {
  tierEventId: string;
};

/** A request batch as the analyzer stores it: the digest of each record, not the record. */
export interface DigestBatch {
  id: string;
  runId: string;
  campaignId: string;
  emittedAt: number;
  digests: RecordDigest[];
}

/**
 * The analyzer's event store: every event it consumes is stored by id (idempotently) before its
 * offset is committed, so everything about a run can be read back after a restart, and a live
 * run need keep in memory only what it still judges.
 */
export class RunEventStore {
  constructor(private readonly events: RunEventRepository) {}

  async save(
    kind: StoredKind,
    topic: string,
    event: { id: string; runId: string; emittedAt: number },
  ): Promise<boolean> {
    const inserted = await this.events.appendMany([
      { eventId: event.id, runId: event.runId, topic, kind, occurredAt: event.emittedAt, payload: event },
    ]);
    return inserted > 0; // false: stored already (a redelivery)
  }

  /** Deletes all but the newest `keep` stored events of a run; returns how many went. */
  prune(runId: string, keep: number): Promise<number> {
    return this.events.pruneRun(runId, keep);
  }

  /** Records that a stored tier change was published. */
  async markTierPublished(event: SloTierChange): Promise<void> {
    const marker: TierPublished = { tierEventId: event.id };
    await this.events.appendMany([
      {
        eventId: `${event.id}:published`,
        runId: event.runId,
        topic: Topics.sloTier.name,
        kind: 'tier-published' satisfies StoredKind,
        occurredAt: event.emittedAt,
        payload: marker,
      },
    ]);
  }

  list(runId: string, options: { topic?: string; kind?: StoredKind } = {}): Promise<RunEventRecord[]> {
    return this.events.listByRun(runId, options);
  }

  count(runId: string, options: { topic?: string; kind?: StoredKind } = {}): Promise<number> {
    return this.events.countByRun(runId, options);
  }

  /** Responses the semantic-monitor reported token stats of (summed over its batched signals). */
  countTokenStats(runId: string): Promise<number> {
    return this.events.countItemsByRun(runId, 'token-stats' satisfies StoredKind, 'stats');
  }

  /** The stored spec of a run (its first shard command), or null when none was stored. */
  async spec(runId: string): Promise<CampaignSpec | null> {
    const command = (await this.events.listByRun(runId, { topic: Topics.runShard.name, limit: 1 }))[0];
    return (command?.payload as RunShardCommand | undefined)?.spec ?? null;
  }
}

/** The per-record token stats of a run's stored `token-stats-batch` signals, in stored order. */
export function storedTokenStats(stored: readonly RunEventRecord[]): TokenStatsSignal[] {
  return storedOf<TokenStatsBatchSignal | TokenStatsSignal>(stored, 'token-stats').flatMap((s) =>
    // A store written before the batching holds one signal per record.
    s.kind === 'token-stats' ? [s] : expandTokenStats(s),
  );
}

/** Payloads of one kind among stored events. */
export function storedOf<T>(stored: readonly RunEventRecord[], kind: StoredKind): T[] {
  return stored.filter((e) => e.kind === kind).map((e) => e.payload as T);
}

/** A run's whole timeline from its stored events (windows, digests, GPU scrapes, detector signals). */
export function timelineOf(stored: readonly RunEventRecord[]): RunTimeline {
  const timeline = new RunTimeline();
  for (const e of stored) {
    if (e.kind === 'window') timeline.addWindow(e.payload as TelemetryWindow);
    else if (e.kind === 'digest') timeline.addDigests((e.payload as unknown as DigestBatch).digests);
    else if (e.kind === 'gpu') timeline.addGpu(e.payload as GpuTelemetry);
    else if (e.kind === 'semantic' && (e.payload as SemanticSignal).kind === 'detector')
      timeline.addDetector(e.payload as DetectorSignal);
  }
  return timeline;
}
