import { Injectable } from '@nestjs/common';
import { CampaignRepository, RunEventRepository, RunRepository, type RunEventRecord } from '@fathom/storage';
import {
  Topics,
  type BreakerChange,
  type RunProgress,
  type SloTierChange,
  type TelemetryWindow,
} from '@fathom/contracts';
import { ProgressLatency, buildRunProgress } from '@fathom/analysis';

/** Runs whose windows are kept between calls (the newest asked for). */
const CACHED_RUNS = 16;
/**
 * Windows are stored under the time their generator emitted them, and one from a lagging shard
 * can be stored after newer ones: each call reads again from this long before the newest window
 * it has, and skips the windows it already holds (by id). A window stored later than that counts
 * in the run's summary but not in its live progress.
 */
export const PROGRESS_REREAD_MS = 60_000;
/** Windows per read. */
const PAGE_SIZE = 500;
/** What a kept window holds instead of its histograms (their latency is in `ProgressLatency`). */
const NO_HISTOGRAMS: TelemetryWindow['histogramsUs'] = { e2e: '', correctedE2e: '', ttft: '', itl: '' };

/** A run's windows read so far: counts kept, histograms decoded once and let go. */
class RunWindows {
  readonly latency = new ProgressLatency();
  readonly windows: TelemetryWindow[] = [];
  /** occurred_at of the newest window read, null before the first. */
  private newestAt: number | null = null;

  /** Reads the windows stored since the last call (and the re-read span before it). */
  async refresh(events: RunEventRepository, runId: string): Promise<void> {
    let after =
      this.newestAt === null ? null : { occurredAt: this.newestAt - PROGRESS_REREAD_MS, eventId: '' };
    for (;;) {
      const page = await events.pageByRun(runId, {
        topic: Topics.telemetryWindow.name,
        kinds: ['window'],
        after,
        limit: PAGE_SIZE,
      });
      for (const event of page) this.add(event);
      if (page.length < PAGE_SIZE) return;
      const last = page[page.length - 1];
      after = { occurredAt: last.occurredAt, eventId: last.eventId };
    }
  }

  private add(event: RunEventRecord): void {
    this.newestAt = Math.max(this.newestAt ?? event.occurredAt, event.occurredAt);
    // Payloads were validated against their topic's schema before the analyzer stored them.
    // Decoded now, once (a window read again is skipped by id): `buildRunProgress` finds every
    // kept window already counted.
    for (const window of this.latency.add([event.payload as unknown as TelemetryWindow]))
      this.windows.push({ ...window, histogramsUs: NO_HISTOGRAMS });
  }
}

/**
 * A run's progress from what the analyzer stored (windows, tier and breaker changes): the same
 * answer embedded (`fathom run`) and over the API (`GET /v1/runs/:id/progress`), whichever
 * process the analyzer runs in. Cost per call: the windows stored since the last call (and the
 * last `PROGRESS_REREAD_MS` again), not the whole run, which a terminal asks for every second.
 */
@Injectable()
export class RunProgressService {
  private readonly runs = new Map<string, RunWindows>();

  constructor(
    private readonly runRepository: RunRepository,
    private readonly campaigns: CampaignRepository,
    private readonly events: RunEventRepository,
  ) {}

  /** null when there is no such run. */
  async get(runId: string, nowMs: number = Date.now()): Promise<RunProgress | null> {
    const run = await this.runRepository.get(runId);
    if (!run) return null;
    let windows = this.runs.get(runId);
    if (!windows) {
      windows = new RunWindows();
      this.runs.set(runId, windows);
      while (this.runs.size > CACHED_RUNS) this.runs.delete(this.runs.keys().next().value!);
    }
    const [campaign, tiers, breakers] = await Promise.all([
      this.campaigns.get(run.campaignId),
      this.events.listByRun(runId, { topic: Topics.sloTier.name, kind: 'tier' }),
      this.events.listByRun(runId, { topic: Topics.breaker.name, kind: 'breaker' }),
      windows.refresh(this.events, runId),
    ]);
    return buildRunProgress(
      {
        runId,
        status: run.status,
        startedAt: run.startedAt,
        endedAt: run.endedAt,
        plannedDurationMs: campaign?.spec.load.durationMs ?? null,
        windows: windows.windows,
        tierChanges: tiers.map((e) => e.payload as unknown as SloTierChange),
        breakerChanges: breakers.map((e) => e.payload as unknown as BreakerChange),
        nowMs,
      },
      windows.latency,
    );
  }
}
