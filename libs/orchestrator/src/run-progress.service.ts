import { Injectable } from '@nestjs/common';
import { CampaignRepository, RunEventRepository, RunRepository } from '@fathom/storage';
import {
  Topics,
  type BreakerChange,
  type RunProgress,
  type SloTierChange,
  type TelemetryWindow,
} from '@fathom/contracts';
import { ProgressLatency, buildRunProgress } from '@fathom/analysis';

/** Runs whose decoded latency is kept between calls (the newest asked for). */
const CACHED_RUNS = 16;

/**
 * A run's progress from what the analyzer stored (windows, tier and breaker changes): the same
 * answer embedded (`fathom run`) and over the API (`GET /v1/runs/:id/progress`), whichever
 * process the analyzer runs in. Cost: one read of the run's windows per call.
 */
@Injectable()
export class RunProgressService {
  private readonly latency = new Map<string, ProgressLatency>();

  constructor(
    private readonly runs: RunRepository,
    private readonly campaigns: CampaignRepository,
    private readonly events: RunEventRepository,
  ) {}

  /** null when there is no such run. */
  async get(runId: string, nowMs: number = Date.now()): Promise<RunProgress | null> {
    const run = await this.runs.get(runId);
    if (!run) return null;
    const [campaign, windows, tiers, breakers] = await Promise.all([
      this.campaigns.get(run.campaignId),
      this.events.listByRun(runId, { topic: Topics.telemetryWindow.name, kind: 'window' }),
      this.events.listByRun(runId, { topic: Topics.sloTier.name, kind: 'tier' }),
      this.events.listByRun(runId, { topic: Topics.breaker.name, kind: 'breaker' }),
    ]);
    let latency = this.latency.get(runId);
    if (!latency) {
      latency = new ProgressLatency();
      this.latency.set(runId, latency);
      while (this.latency.size > CACHED_RUNS) this.latency.delete(this.latency.keys().next().value!);
    }
    // Payloads were validated against their topic's schema before the analyzer stored them.
    return buildRunProgress(
      {
        runId,
        status: run.status,
        startedAt: run.startedAt,
        endedAt: run.endedAt,
        plannedDurationMs: campaign?.spec.load.durationMs ?? null,
        windows: windows.map((e) => e.payload as unknown as TelemetryWindow),
        tierChanges: tiers.map((e) => e.payload as unknown as SloTierChange),
        breakerChanges: breakers.map((e) => e.payload as unknown as BreakerChange),
        nowMs,
      },
      latency,
    );
  }
}
