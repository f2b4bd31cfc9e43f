import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectBus, type Bus, type Subscription } from '@fathom/bus';
import { CampaignRepository, RunRepository } from '@fathom/storage';
import { Topics, type RunReport, type SloTierChange, type RunLifecycle } from '@fathom/contracts';
import { decideRerun } from '@fathom/analysis';
import { consumerGroup } from '../runtime/service-name';
import { CampaignService } from './campaign.service';

/**
 * Owns the run lifecycle: pending -> running on the first shard, completed/failed when the
 * analyzer's report arrives; and reruns when a run's SLO tier changed, bounded by the
 * campaign's rerun policy (cap, cool-down, one pending at a time).
 */
@Injectable()
export class RunLifecycleService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RunLifecycleService.name);
  private readonly subscriptions: Subscription[] = [];
  /** Runs whose tier changed while they ran: a rerun is considered once they end. */
  private readonly rerunRequested = new Map<string, string>();
  /** Campaigns with a rerun scheduled (timer) or running. */
  private readonly pendingRerun = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    @InjectBus() private readonly bus: Bus,
    private readonly runs: RunRepository,
    private readonly campaigns: CampaignRepository,
    private readonly campaignService: CampaignService,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriptions.push(
      await this.bus.subscribe(
        Topics.runLifecycle,
        { group: consumerGroup('orchestrator', Topics.runLifecycle) },
        (e) => this.onLifecycle(e),
      ),
      await this.bus.subscribe(
        Topics.runReport,
        { group: consumerGroup('orchestrator', Topics.runReport) },
        (e) => this.onReport(e),
      ),
      await this.bus.subscribe(
        Topics.sloTier,
        { group: consumerGroup('orchestrator', Topics.sloTier) },
        (e) => this.onTierChange(e),
      ),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    await Promise.all(this.subscriptions.map((s) => s.close()));
  }

  private async onLifecycle(event: RunLifecycle): Promise<void> {
    if (event.phase === 'shard-started') {
      await this.runs.transition(event.runId, 'running', { at: event.emittedAt });
    }
  }

  private async onReport(event: RunReport): Promise<void> {
    const { summary } = event;
    await this.runs.saveSummary(event.runId, summary);
    if (summary.status === 'failed') {
      await this.runs.transition(event.runId, 'failed', {
        reason: summary.reason ?? 'failed',
        at: summary.endedAt ?? undefined,
      });
    } else if (summary.status === 'completed') {
      await this.runs.transition(event.runId, 'completed', { at: summary.endedAt ?? undefined });
    }
    const run = await this.runs.get(event.runId);
    if (run?.trigger === 'rerun') this.pendingRerun.delete(run.campaignId);
    const reason = this.rerunRequested.get(event.runId);
    if (reason !== undefined) {
      this.rerunRequested.delete(event.runId);
      await this.considerRerun(event.campaignId, event.runId, reason);
    }
  }

  private async onTierChange(event: SloTierChange): Promise<void> {
    // The first tier a run enters is an assignment, not a change.
    if (event.from === null) return;
    this.logger.log(`run ${event.runId}: tier ${event.from} -> ${event.to} (${event.reason})`);
    const run = await this.runs.get(event.runId);
    if (!run) return;
    const reason = `tier ${event.from} -> ${event.to}: ${event.reason}`;
    if (run.status === 'pending' || run.status === 'running') {
      if (!this.rerunRequested.has(run.id)) this.rerunRequested.set(run.id, reason);
    } else {
      await this.considerRerun(run.campaignId, run.id, reason);
    }
  }

  private async considerRerun(campaignId: string, runId: string, reason: string): Promise<void> {
    const campaign = await this.campaigns.get(campaignId);
    if (!campaign) return;
    const history = await this.runs.list({ campaignId });
    const ended = history.map((r) => r.endedAt).filter((t): t is number => t !== null);
    const decision = decideRerun(
      campaign.spec.reruns,
      {
        rerunsStarted: history.filter((r) => r.trigger === 'rerun').length,
        rerunPending: this.pendingRerun.has(campaignId),
        lastRunEndedAt: history.some((r) => r.endedAt === null)
          ? null
          : ended.length
            ? Math.max(...ended)
            : null,
      },
      Date.now(),
    );
    if (!decision.start) {
      this.logger.log(`no rerun of campaign ${campaignId} after run ${runId}: ${decision.reason}`);
      return;
    }
    this.pendingRerun.add(campaignId);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.campaignService
        .startRun(campaignId, campaign.spec, 'rerun', runId)
        .then((r) => this.logger.log(`rerun ${r.runId} of campaign ${campaignId} started (${reason})`))
        .catch((error: Error) => {
          this.pendingRerun.delete(campaignId);
          this.logger.error(`rerun of campaign ${campaignId} failed to start: ${error.message}`);
        });
    }, decision.delayMs);
    this.timers.add(timer);
  }
}
