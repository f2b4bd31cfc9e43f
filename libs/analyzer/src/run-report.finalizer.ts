import type { Logger } from '@nestjs/common';
import type { Bus } from '@fathom/bus';
import type { JsonValue, RunReportRepository, RunRepository } from '@fathom/storage';
import type { MeasurementValidity } from '@fathom/contracts';
import {
  Topics,
  envelope,
  type RootCauseChange,
  type RunLifecycle,
  type RunSummary,
  type TelemetryWindow,
  Detectors,
} from '@fathom/contracts';
import {
  assessValidity,
  buildRunReportDocument,
  foldReportDigests,
  buildRunSummary,
  judgeWholeRun,
  rootCausesOfRun,
  tierPolicyFor,
  withTelemetryLoss,
  type MissingShard,
  type ReportDigestFigures,
  type RunReportDocument,
  type TokenStatsFigures,
  type TrackedCause,
} from '@fathom/analysis';
import {
  STORED_PAGE_SIZE,
  foldStoredTokenStats,
  readStoredRun,
  type RunEventStore,
  type StoredRun,
} from './run-event.store';

const SETTLE_POLL_MS = 200;

/**
 * The pause after a settle check that took `checkMs`: at least `SETTLE_POLL_MS`, and twice the
 * check, so that checking a run whose events take long to count (it reads them all; a run of
 * hours: hundreds of thousands) holds the store, one connection on PGlite, a third of the time
 * at most while the run's last telemetry is still being stored.
 */
export function settlePauseMs(checkMs: number): number {
  return Math.max(SETTLE_POLL_MS, 2 * checkMs);
}
/** The sweep for silent runs looks at most this often (ms). */
const SWEEP_MAX_MS = 5_000;
/** A shard that never started is taken for missing after this many silence bounds. */
const NEVER_STARTED_BOUNDS = 3;

/** What the finalizer needs of the runs the analyzer judges live. */
export interface LiveRuns {
  /** Runs a run's last live evaluation and returns its ranked causes; null when it has no live state. */
  finalEvaluation(runId: string): Promise<TrackedCause[] | null>;
  /** Drops a run's live state. */
  forget(runId: string): void;
  /** Runs that have live state. */
  liveRunIds(): string[];
  /** The run was reported with this validity and whole-run tier (its live metrics show them). */
  reported(runId: string, validity: MeasurementValidity, tier: string | null): void;
}

export interface FinalizerOptions {
  /** How long a run whose shards all ended waits for its trailing telemetry (ms). */
  readonly settleMs: number;
  /**
   * How long a run with a shard that never ended may stay silent (no window, no lifecycle event)
   * before it is reported `partial`: its generator died or was cut off (ms).
   */
  readonly silenceMs: number;
  readonly stallMs: number;
}

/**
 * Builds a run's summary and versioned report from what was stored, once:
 *
 * | shards                          | when                                                        | status     |
 * |---------------------------------|-------------------------------------------------------------|------------|
 * | all ended                       | their published windows and token signals arrived, or `settleMs` passed | from the shards |
 * | some never ended                | the run was silent `silenceMs`, and its planned end is `silenceMs` past (3x when a shard never started) | `partial`  |
 *
 * A partial run's summary holds everything the stored windows measured and names the missing
 * shards, so a dead generator never leaves a run without a summary.
 */
export class RunReportFinalizer {
  private readonly finalizing = new Set<string>();
  /** When each run was last heard of (any window or lifecycle event), by this process's clock. */
  private readonly lastHeard = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly bus: Bus,
    private readonly store: RunEventStore,
    private readonly reports: RunReportRepository,
    private readonly runs: RunRepository,
    private readonly live: LiveRuns,
    private readonly options: FinalizerOptions,
    private readonly logger: Logger,
  ) {}

  start(): void {
    const every = Math.max(250, Math.min(SWEEP_MAX_MS, Math.floor(this.options.silenceMs / 4)));
    this.timer = setInterval(() => void this.sweep(), every);
    this.timer.unref();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
  }

  heard(runId: string): void {
    this.lastHeard.set(runId, Date.now());
  }

  /**
   * Looks at every open run (finalizing the ones whose shards ended or went silent), and drops
   * the live state of runs no longer open that have been silent (ended without this analyzer's
   * report, e.g. failed by the orchestrator), so nothing of a run outlives it in memory.
   */
  async sweep(): Promise<void> {
    try {
      const open = new Set((await this.runs.list({ status: ['pending', 'running'] })).map((r) => r.id));
      for (const runId of open) {
        if (!this.lastHeard.has(runId)) this.heard(runId);
        void this.maybeFinalize(runId);
      }
      const now = Date.now();
      for (const runId of new Set([...this.live.liveRunIds(), ...this.lastHeard.keys()])) {
        if (open.has(runId) || this.finalizing.has(runId)) continue;
        if (now - (this.lastHeard.get(runId) ?? 0) < this.options.silenceMs) continue;
        this.live.forget(runId);
        this.lastHeard.delete(runId);
      }
    } catch (error) {
      this.logger.error(`looking for runs to report failed: ${(error as Error).message}`);
    }
  }

  /** Reports the run once every shard ended and its trailing telemetry arrived, or it went silent. */
  async maybeFinalize(runId: string): Promise<void> {
    if (this.finalizing.has(runId)) return;
    this.finalizing.add(runId);
    try {
      if (await this.reports.latest(runId)) return;
      const deadline = Date.now() + this.options.settleMs;
      for (;;) {
        if (this.closed) return;
        const checkStarted = performance.now();
        const lifecycle = (await this.store.list(runId, { topic: Topics.runLifecycle.name })).map(
          (e) => e.payload as RunLifecycle,
        );
        const shardCount = lifecycle[0]?.shard.count;
        if (!shardCount) return;
        const ended = lifecycle.filter((l) => l.phase !== 'shard-started');
        const endedShards = new Set(ended.map((l) => l.shard.index));
        if (endedShards.size < shardCount) {
          const missing = Array.from({ length: shardCount }, (_, i) => i).filter((i) => !endedShards.has(i));
          // A shard never started may still be on its way (a consumer group rebalancing after a
          // generator joined or died hands its command over late): it waits three bounds.
          const started = new Set(
            lifecycle.filter((l) => l.phase === 'shard-started').map((l) => l.shard.index),
          );
          const boundMs =
            this.options.silenceMs * (missing.every((i) => started.has(i)) ? 1 : NEVER_STARTED_BOUNDS);
          const silentMs = Date.now() - (this.lastHeard.get(runId) ?? Date.now());
          if (silentMs < boundMs) return;
          // A broker outage silences every shard at once: none is taken for dead before the
          // run's planned end (plus the same bound), by when the generators resent their backlog.
          const startedAt = Math.min(...lifecycle.map((l) => l.emittedAt));
          const plannedMs = (await this.store.spec(runId))?.load.durationMs ?? 0;
          if (Date.now() < startedAt + plannedMs + boundMs) return;
          this.logger.warn(
            `run ${runId}: shard(s) ${missing.join(', ')} silent for ${Math.round(silentMs / 1000)} s without ending: reporting it partial`,
          );
          await this.report(runId, lifecycle, missing);
          return;
        }
        const expectedWindows = ended.reduce((n, l) => n + l.counts.windowsPublished, 0);
        const expectedSignals = ended.reduce((n, l) => n + l.counts.recordsPublished, 0);
        const windows = await this.store.count(runId, { topic: Topics.telemetryWindow.name });
        // Token stats of every published record (batched per telemetry batch); detector and
        // goodput signals are extra.
        const signals = await this.store.countTokenStats(runId);
        if ((windows >= expectedWindows && signals >= expectedSignals) || Date.now() >= deadline) {
          if (Date.now() >= deadline) {
            this.logger.warn(
              `run ${runId}: reporting with ${windows}/${expectedWindows} windows and ${signals}/${expectedSignals} token signals after ${this.options.settleMs} ms`,
            );
          }
          await this.report(runId, lifecycle, []);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, settlePauseMs(performance.now() - checkStarted)));
      }
    } catch (error) {
      this.logger.error(`run ${runId}: could not build the report: ${(error as Error).message}`);
    } finally {
      this.finalizing.delete(runId);
    }
  }

  private async report(runId: string, lifecycle: RunLifecycle[], missing: readonly number[]): Promise<void> {
    const campaignId = lifecycle[0].campaignId;
    const liveCauses = await this.live.finalEvaluation(runId);
    // The whole run, read back from storage a page at a time: the live state keeps only what it
    // still judges, and the token stats are folded as they are read.
    const stored = await readStoredRun(this.store, runId, STORED_PAGE_SIZE, {
      stallMs: this.options.stallMs,
    });
    const tokenStats = await foldStoredTokenStats(this.store, runId, stored.tokenPlacement);
    const run = await this.runs.get(runId);
    const { summary, document, validity, rootCauses } = reportOfStoredRun({
      runId,
      lifecycle,
      missing,
      stored,
      tokenStats,
      liveCauses,
      aborted: run?.status === 'aborted',
      stallMs: this.options.stallMs,
    });
    const saved = await this.reports.save(runId, document as unknown as JsonValue);
    this.live.reported(runId, validity, summary.tier);
    await this.bus.publish(Topics.runReport, {
      ...envelope(campaignId, runId),
      summary,
      reportVersion: saved.version,
      validity,
      rootCauses: rootCauses.map(stripNamedAt),
    });
    this.live.forget(runId);
    this.lastHeard.delete(runId);
    this.logger.log(
      `run ${runId}: reported ${summary.status} (${summary.requests} requests, tier ${summary.tier ?? 'n/a'}, ${rootCauses.length} causes, ${validity.valid ? 'valid' : 'invalid'})`,
    );
  }
}

/** What a run's report is built from: its stored events, read back, and what the analyzer knows live. */
export interface StoredRunReportInput {
  readonly runId: string;
  readonly lifecycle: readonly RunLifecycle[];
  /** Shards that never ended (the run is `partial`). */
  readonly missing: readonly number[];
  readonly stored: StoredRun;
  /** Folded on `stored.tokenPlacement` (`foldStoredTokenStats`). */
  readonly tokenStats: TokenStatsFigures;
  /** The live evaluation's ranked causes; null: none live (e.g. after a restart), the stored ones. */
  readonly liveCauses: TrackedCause[] | null;
  readonly aborted: boolean;
  readonly stallMs: number;
}

/** A run's summary, its versioned report document, and the validity and causes they state. */
export function reportOfStoredRun(input: StoredRunReportInput): {
  summary: RunSummary;
  document: RunReportDocument;
  validity: MeasurementValidity;
  rootCauses: TrackedCause[];
} {
  const { stored, lifecycle, tokenStats } = input;
  const { timeline, spec, windows, tierChanges, breakerChanges } = stored;
  const tiers = tierPolicyFor(spec?.slo.tiers).tiers;
  const digests = digestsStalledFrom(stored, input.stallMs);
  const wholeRun = judgeWholeRun(timeline, tiers, breakerChanges, digests.wholeRun);
  const rootCauses = rootCausesOfRun(timeline.windows, input.liveCauses ?? causesFromStored(stored.causes));
  const built = buildRunSummary({
    spec,
    lifecycle,
    windows,
    tokenStats,
    detectorSignals: stored.detectors.length,
    gpu: stored.gpu,
    tierChanges,
    aborted: input.aborted,
    missingShards: input.missing.map((index) => missingShard(index, lifecycle, windows)),
    wholeRun,
    embedded:
      stored.detectors.find((s) => s.detector === Detectors.semanticGoodput)?.figures.embedded ?? null,
  });
  const validity = withTelemetryLoss(
    assessValidity(timeline.windows, digests.tokenAgreement, rootCauses.length > 0),
    built.telemetry,
  );
  const summary = { ...built, validity };
  const document = buildRunReportDocument({
    runId: input.runId,
    campaignId: lifecycle[0].campaignId,
    summary,
    timeline,
    tiers,
    tierChanges,
    breakerChanges,
    rootCauses,
    validity,
    stallMs: input.stallMs,
    gpu: stored.gpu,
    spec,
    tokenStats,
    digests,
  });
  return { summary, document, validity, rootCauses };
}

/**
 * The stored run's digest fold, its stalls counted from `stallMs`: refolded from the held digests
 * when it was read with another bound and every digest is held; a sampled run cannot be.
 */
function digestsStalledFrom(stored: StoredRun, stallMs: number): ReportDigestFigures {
  const folded = stored.digests;
  if (folded.stallMs === stallMs) return folded;
  if (folded.sample)
    throw new RangeError(
      `the run's digests were folded with stalls from ${folded.stallMs} ms and sampled: read it back with stallMs ${stallMs}`,
    );
  const start = stored.timeline.startMs ?? 0;
  return foldReportDigests(stored.timeline.digests, {
    objectives: tierPolicyFor(stored.spec?.slo.tiers).tiers.flatMap((t) => t.objectives),
    stallMs,
    spanFromMs: start - 1,
    maxDigests: Number.POSITIVE_INFINITY,
  });
}

/** A shard that never ended: its generator (from its start) and when it was last heard of. */
function missingShard(
  index: number,
  lifecycle: readonly RunLifecycle[],
  windows: readonly TelemetryWindow[],
): MissingShard {
  const started = lifecycle.find((l) => l.phase === 'shard-started' && l.shard.index === index);
  let lastSeenAt: number | null = started?.emittedAt ?? null;
  for (const w of windows) {
    if (w.shard !== index || (started && w.generatorId !== started.generatorId)) continue;
    lastSeenAt = lastSeenAt === null ? w.emittedAt : Math.max(lastSeenAt, w.emittedAt);
  }
  return { index, generatorId: started?.generatorId ?? null, lastSeenAt };
}

export function stripNamedAt(cause: TrackedCause): Omit<TrackedCause, 'namedAt'> {
  const { namedAt: _namedAt, ...rest } = cause;
  return rest;
}

/** After a restart: each kind's strongest stored verdict, named when it was first published. */
function causesFromStored(changes: readonly RootCauseChange[]): TrackedCause[] {
  const byKind = new Map<string, TrackedCause>();
  for (const change of [...changes].sort((a, b) => a.emittedAt - b.emittedAt)) {
    for (const cause of change.causes) {
      const seen = byKind.get(cause.kind);
      if (!seen) byKind.set(cause.kind, { ...cause, namedAt: change.emittedAt });
      else if (cause.confidence > seen.confidence)
        byKind.set(cause.kind, { ...cause, namedAt: seen.namedAt });
    }
  }
  return [...byKind.values()].sort((a, b) => b.confidence - a.confidence);
}
