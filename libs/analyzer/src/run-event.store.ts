import type { RunEventRecord, RunEventRepository } from '@fathom/storage';
import {
  Topics,
  type BreakerChange,
  type TokenStatsBatchSignal,
  type TokenStatsSignal,
  type CampaignSpec,
  type DetectorSignal,
  type GpuTelemetry,
  type RootCauseChange,
  type RunShardCommand,
  type SemanticSignal,
  type SloTierChange,
  type TelemetryWindow,
} from '@fathom/contracts';
import {
  DEFAULT_ROOT_CAUSE_OPTIONS,
  MAX_REPORT_DIGESTS,
  ReportDigestsAccumulator,
  RunTimeline,
  TokenStatsAccumulator,
  tierPolicyFor,
  type RecordDigest,
  type ReportDigestFigures,
  type TokenStatsFigures,
  type TokenStatsPlacement,
} from '@fathom/analysis';

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

  /** A run's events (of one kind or topic), as `list` orders them, in pages of `pageSize` rows. */
  pages(
    runId: string,
    options: { topic?: string; kinds?: readonly StoredKind[]; pageSize: number },
  ): AsyncGenerator<RunEventRecord[]> {
    return this.events.pagesByRun(runId, options);
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

/** Rows per page when a run is read back: a digest or token-stats row holds one telemetry batch's records. */
export const STORED_PAGE_SIZE = 200;

/** What a restarted analyzer reads back of a run first: everything but its digests and token stats. */
export interface StoredEvents {
  /** The spec of the first shard command stored; null when none was. */
  readonly spec: CampaignSpec | null;
  /** Every stored window, redeliveries included, in stored order (the timeline keeps one per key). */
  readonly windows: TelemetryWindow[];
  readonly detectors: DetectorSignal[];
  /** Every scrape, failed ones included (the timeline keeps the ok ones). */
  readonly gpu: GpuTelemetry[];
  /** In the order they were announced (by emittedAt, then id). */
  readonly tierChanges: SloTierChange[];
  /** Ids of the tier changes known to have been published. */
  readonly tiersPublished: ReadonlySet<string>;
  readonly breakerChanges: BreakerChange[];
  readonly causes: RootCauseChange[];
  /** Windows, ok scrapes and detector signals. */
  readonly timeline: RunTimeline;
}

/** What a run's report reads back of it: everything but its token stats, the digests folded. */
export interface StoredRun extends StoredEvents {
  /**
   * Windows, ok scrapes, detector signals and the digests held (`digests.held`: every one up to
   * the cap, else a sample; the timeline's bounds count them all).
   */
  readonly timeline: RunTimeline;
  /** Every digest folded: the report's exact figures of them, on the spec's tiers. */
  readonly digests: ReportDigestFigures;
  /** Where the run's token stats are placed (`foldStoredTokenStats`): its windows and the bounded request-end index. */
  readonly tokenPlacement: TokenStatsPlacement;
}

/** How a run's digests are folded as it is read back. */
export interface DigestFoldOptions {
  /** The stall bound the report counts with (ms); default the root-cause engine's. */
  readonly stallMs?: number;
  /** Digests held at most; default `MAX_REPORT_DIGESTS`. */
  readonly maxDigests?: number;
  /** Request ends indexed at most, for token stats stored without theirs; default `MAX_REPORT_DIGESTS`. */
  readonly maxRequestEnds?: number;
}

/**
 * Reads a run back from the store a page at a time, in stored order (as `list` gives it), keeping
 * what it needs of each page: digests are left to `storedDigests`, token stats to
 * `foldStoredTokenStats` and lifecycle events to their caller.
 */
export async function readStoredEvents(
  store: RunEventStore,
  runId: string,
  pageSize = STORED_PAGE_SIZE,
): Promise<StoredEvents> {
  const run = {
    spec: null as CampaignSpec | null,
    windows: [] as TelemetryWindow[],
    detectors: [] as DetectorSignal[],
    gpu: [] as GpuTelemetry[],
    tierChanges: [] as SloTierChange[],
    tiersPublished: new Set<string>(),
    breakerChanges: [] as BreakerChange[],
    causes: [] as RootCauseChange[],
    timeline: new RunTimeline(),
  };
  for await (const page of store.pages(runId, { kinds: READ_BACK_KINDS, pageSize })) {
    for (const { kind, payload } of page) {
      if (kind === 'shard-command') run.spec ??= (payload as unknown as RunShardCommand).spec;
      else if (kind === 'window') {
        run.windows.push(payload as unknown as TelemetryWindow);
        run.timeline.addWindow(payload as unknown as TelemetryWindow);
      } else if (kind === 'gpu') {
        run.gpu.push(payload as unknown as GpuTelemetry);
        run.timeline.addGpu(payload as unknown as GpuTelemetry);
      } else if (kind === 'semantic') {
        if ((payload as unknown as SemanticSignal).kind !== 'detector') continue;
        run.detectors.push(payload as unknown as DetectorSignal);
        run.timeline.addDetector(payload as unknown as DetectorSignal);
      } else if (kind === 'tier') run.tierChanges.push(payload as unknown as SloTierChange);
      else if (kind === 'tier-published')
        run.tiersPublished.add((payload as unknown as TierPublished).tierEventId);
      else if (kind === 'breaker') run.breakerChanges.push(payload as unknown as BreakerChange);
      else if (kind === 'cause') run.causes.push(payload as unknown as RootCauseChange);
    }
  }
  // Stored order is by emittedAt already; sorted (stably) so that the contract does not rest on it.
  run.tierChanges.sort((a, b) => a.emittedAt - b.emittedAt);
  run.breakerChanges.sort((a, b) => a.emittedAt - b.emittedAt);
  return run;
}

/** A run's stored digest batches, in stored order, a page of batches at a time. */
export async function* storedDigests(
  store: RunEventStore,
  runId: string,
  pageSize = STORED_PAGE_SIZE,
): AsyncGenerator<readonly RecordDigest[]> {
  for await (const page of store.pages(runId, { kinds: ['digest'], pageSize }))
    for (const { payload } of page) yield (payload as unknown as DigestBatch).digests;
}

/**
 * `readStoredEvents`, then the digests in a second pass, once the spec and windows are known,
 * folded (`ReportDigestsAccumulator`): at most `maxDigests` of them are held.
 */
export async function readStoredRun(
  store: RunEventStore,
  runId: string,
  pageSize = STORED_PAGE_SIZE,
  fold: DigestFoldOptions = {},
): Promise<StoredRun> {
  const run = await readStoredEvents(store, runId, pageSize);
  // The whole run's span starts just before its first window (`judgeWholeRun`); without one,
  // before the first digest's start, which every digest ends after.
  const firstWindowStart = run.timeline.startMs;
  const accumulator = new ReportDigestsAccumulator({
    objectives: tierPolicyFor(run.spec?.slo.tiers).tiers.flatMap((t) => t.objectives),
    stallMs: fold.stallMs ?? DEFAULT_ROOT_CAUSE_OPTIONS.stallMs,
    spanFromMs: firstWindowStart === null ? Number.NEGATIVE_INFINITY : firstWindowStart - 1,
    maxDigests: fold.maxDigests ?? MAX_REPORT_DIGESTS,
    maxRequestEnds: fold.maxRequestEnds ?? MAX_REPORT_DIGESTS,
  });
  for await (const digests of storedDigests(store, runId, pageSize)) accumulator.addDigests(digests);
  const digests = accumulator.figures();
  run.timeline.addDigests(digests.held);
  if (digests.startedAtMin !== null && digests.endedAtMax !== null)
    run.timeline.addDigestBounds(digests.startedAtMin, digests.endedAtMax);
  return {
    ...run,
    digests,
    tokenPlacement: { windows: run.timeline.windows, requestEnds: digests.requestEnds },
  };
}

/** Every stored kind but digests (folded after), token stats (folded apart) and lifecycle events (read by the finalizer). */
const READ_BACK_KINDS: readonly StoredKind[] = [
  'shard-command',
  'window',
  'gpu',
  'semantic',
  'tier',
  'tier-published',
  'breaker',
  'cause',
];

/**
 * Folds a run's stored token stats, a page at a time in stored order, placed on the run's
 * windows and digests (`readStoredRun`'s timeline): no page outlives its fold.
 */
export async function foldStoredTokenStats(
  store: RunEventStore,
  runId: string,
  placement: TokenStatsPlacement,
  pageSize = STORED_PAGE_SIZE,
): Promise<TokenStatsFigures> {
  const accumulator = new TokenStatsAccumulator(placement);
  for await (const page of store.pages(runId, { kinds: ['token-stats'], pageSize }))
    for (const e of page) accumulator.add(e.payload as unknown as TokenStatsBatchSignal | TokenStatsSignal);
  return accumulator.figures();
}
