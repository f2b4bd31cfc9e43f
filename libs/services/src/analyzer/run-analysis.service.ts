import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectBus, type Bus, type Subscription } from '@fathom/bus';
import { RunEventRepository, RunReportRepository, RunRepository } from '@fathom/storage';
import {
  Topics,
  envelope,
  type CampaignSpec,
  type GpuTelemetry,
  type RunLifecycle,
  type RunShardCommand,
  type SemanticSignal,
  type SloTierChange,
  type TelemetryWindow,
  type TokenStatsSignal,
} from '@fathom/contracts';
import { TierTracker, buildRunSummary, evaluateTier, recentTierFigures } from '@fathom/analysis';
import { consumerGroup } from '../runtime/service-name';

/** Tier figures are taken over this much recent load (ms). */
const TIER_SPAN_MS = 10_000;
const SETTLE_POLL_MS = 200;

type StoredKind = 'shard-command' | 'window' | 'lifecycle' | 'semantic' | 'gpu' | 'tier';

/**
 * Joins everything of a run: stores every event it consumes (idempotently, by event id, before
 * the offset is committed), evaluates SLO tiers while the run goes, and once every shard has
 * finished and its trailing telemetry has arrived, builds the summary from what was stored.
 * Because the summary is computed from storage, an analyzer killed mid-run and restarted loses
 * nothing: Kafka redelivers what was not committed, and duplicates are ignored by id.
 */
@Injectable()
export class RunAnalysisService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RunAnalysisService.name);
  private readonly subscriptions: Subscription[] = [];
  private readonly tiers = new TierTracker();
  private readonly recentWindows = new Map<string, TelemetryWindow[]>();
  private readonly finalizing = new Set<string>();
  private readonly settleMs = Number(process.env.FATHOM_ANALYZER_SETTLE_MS ?? 15000);
  private closed = false;

  constructor(
    @InjectBus() private readonly bus: Bus,
    private readonly events: RunEventRepository,
    private readonly reports: RunReportRepository,
    private readonly runs: RunRepository,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriptions.push(
      await this.bus.subscribe(Topics.runShard, { group: consumerGroup('analyzer', Topics.runShard) }, (e) =>
        this.store('shard-command', Topics.runShard.name, e),
      ),
      await this.bus.subscribe(
        Topics.telemetryWindow,
        { group: consumerGroup('analyzer', Topics.telemetryWindow) },
        (e) => this.onWindow(e),
      ),
      await this.bus.subscribe(
        Topics.semanticSignal,
        { group: consumerGroup('analyzer', Topics.semanticSignal) },
        (e) => this.onSemantic(e),
      ),
      await this.bus.subscribe(
        Topics.gpuTelemetry,
        { group: consumerGroup('analyzer', Topics.gpuTelemetry) },
        (e) => this.store('gpu', Topics.gpuTelemetry.name, e),
      ),
      await this.bus.subscribe(
        Topics.runLifecycle,
        { group: consumerGroup('analyzer', Topics.runLifecycle) },
        (e) => this.onLifecycle(e),
      ),
    );
    // Resume runs a previous analyzer left unfinished.
    for (const status of ['pending', 'running'] as const) {
      for (const run of await this.runs.list({ status })) void this.maybeFinalize(run.id);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    await Promise.all(this.subscriptions.map((s) => s.close()));
  }

  private async store(
    kind: StoredKind,
    topic: string,
    event: { id: string; runId: string; emittedAt: number },
  ): Promise<void> {
    await this.events.appendMany([
      { eventId: event.id, runId: event.runId, topic, kind, occurredAt: event.emittedAt, payload: event },
    ]);
  }

  private async onSemantic(signal: SemanticSignal): Promise<void> {
    await this.store('semantic', Topics.semanticSignal.name, signal);
  }

  private async onWindow(window: TelemetryWindow): Promise<void> {
    await this.store('window', Topics.telemetryWindow.name, window);
    const recent = this.recentWindows.get(window.runId) ?? [];
    recent.push(window);
    const horizon = Math.max(...recent.map((w) => w.windowStart)) - 6 * TIER_SPAN_MS;
    const kept = recent.filter((w) => w.windowStart >= horizon);
    this.recentWindows.set(window.runId, kept);
    const verdict = evaluateTier(recentTierFigures(kept, TIER_SPAN_MS, 0));
    const change = this.tiers.observe(window.runId, verdict);
    if (!change) return;
    const figures = recentTierFigures(kept, TIER_SPAN_MS, 0);
    const event: SloTierChange = {
      ...envelope(window.campaignId, window.runId),
      ...change,
      figures: {
        requests: figures.requests,
        availability: figures.availability,
        ...(figures.p99Ms !== null ? { p99Ms: figures.p99Ms } : {}),
        breakerTripsPerMinute: figures.breakerTripsPerMinute,
      },
    };
    await this.store('tier', Topics.sloTier.name, event);
    await this.bus.publish(Topics.sloTier, event);
  }

  private async onLifecycle(event: RunLifecycle): Promise<void> {
    await this.store('lifecycle', Topics.runLifecycle.name, event);
    if (event.phase !== 'shard-started') void this.maybeFinalize(event.runId);
  }

  /** Reports the run once every shard finished and its trailing telemetry arrived (or settleMs passed). */
  private async maybeFinalize(runId: string): Promise<void> {
    if (this.finalizing.has(runId)) return;
    this.finalizing.add(runId);
    try {
      if (await this.reports.latest(runId)) return;
      const deadline = Date.now() + this.settleMs;
      for (;;) {
        if (this.closed) return;
        const lifecycle = (await this.events.listByRun(runId, { topic: Topics.runLifecycle.name })).map(
          (e) => e.payload as RunLifecycle,
        );
        const shardCount = lifecycle[0]?.shard.count;
        const ended = lifecycle.filter((l) => l.phase !== 'shard-started');
        if (!shardCount || new Set(ended.map((l) => l.shard.index)).size < shardCount) return;
        const expectedWindows = ended.reduce((n, l) => n + l.counts.windowsPublished, 0);
        const expectedSignals = ended.reduce((n, l) => n + l.counts.recordsPublished, 0);
        const windows = await this.events.countByRun(runId, { topic: Topics.telemetryWindow.name });
        const signals = await this.events.countByRun(runId, { topic: Topics.semanticSignal.name });
        if ((windows >= expectedWindows && signals >= expectedSignals) || Date.now() >= deadline) {
          if (Date.now() >= deadline) {
            this.logger.warn(
              `run ${runId}: reporting with ${windows}/${expectedWindows} windows and ${signals}/${expectedSignals} token signals after ${this.settleMs} ms`,
            );
          }
          await this.report(runId, lifecycle);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
      }
    } catch (error) {
      this.logger.error(`run ${runId}: could not build the report: ${(error as Error).message}`);
    } finally {
      this.finalizing.delete(runId);
    }
  }

  private async report(runId: string, lifecycle: RunLifecycle[]): Promise<void> {
    const stored = await this.events.listByRun(runId);
    const of = <T>(kind: StoredKind) => stored.filter((e) => e.kind === kind).map((e) => e.payload as T);
    const spec = of<RunShardCommand>('shard-command')[0]?.spec ?? null;
    const semantic = of<SemanticSignal>('semantic');
    const run = await this.runs.get(runId);
    const summary = buildRunSummary({
      spec: spec as CampaignSpec | null,
      lifecycle,
      windows: of<TelemetryWindow>('window'),
      tokenStats: semantic.filter((s): s is TokenStatsSignal => s.kind === 'token-stats'),
      detectorSignals: semantic.filter((s) => s.kind === 'detector').length,
      gpu: of<GpuTelemetry>('gpu'),
      tierChanges: of<SloTierChange>('tier').sort((a, b) => a.emittedAt - b.emittedAt),
      aborted: run?.status === 'aborted',
    });
    const campaignId = lifecycle[0].campaignId;
    await this.reports.save(runId, { schemaVersion: 1, runId, campaignId, summary });
    await this.bus.publish(Topics.runReport, { ...envelope(campaignId, runId), summary });
    this.recentWindows.delete(runId);
    this.tiers.forget(runId);
    this.logger.log(`run ${runId}: reported (${summary.requests} requests, tier ${summary.tier ?? 'n/a'})`);
  }
}
