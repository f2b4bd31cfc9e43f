import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectBus, type Bus, type Subscription } from '@fathom/bus';
import { CampaignRepository, RunRepository } from '@fathom/storage';
import {
  Topics,
  type BreakerChange,
  type RunReport,
  type SloTierChange,
  type RunLifecycle,
} from '@fathom/contracts';
import { decideRerun } from '@fathom/analysis';
import { consumerGroup } from '../runtime/service-name';
import { CampaignService } from './campaign.service';
import { ORCHESTRATOR_CONFIG, type OrchestratorConfig } from './orchestrator.config';
import { measurementInvalidity, rerunBackoffMs, type ReportedValidity } from './rerun-trigger.util';

/**
 * Owns the run lifecycle: pending -> running on the first shard, completed/failed when the
 * analyzer's report arrives; and reruns when a run's SLO tier changed, a breaker opened, or the
 * report says the measurement itself was invalid, bounded by the campaign's rerun policy (cap,
 * cool-down, one pending at a time: the debounce) plus an exponential backoff. Each rerun
 * stores its reason and its parent run.
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
    @Inject(ORCHESTRATOR_CONFIG) private readonly config: OrchestratorConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriptions.push(
      // Joined side by side: each join waits for the group's rebalance, in series they add up.
      ...(await Promise.all([
        this.bus.subscribe(
          Topics.runLifecycle,
          { group: consumerGroup('orchestrator', Topics.runLifecycle) },
          (e) => this.onLifecycle(e),
        ),
        this.bus.subscribe(
          Topics.runReport,
          { group: consumerGroup('orchestrator', Topics.runReport) },
          (e) => this.onReport(e),
        ),
        this.bus.subscribe(Topics.sloTier, { group: consumerGroup('orchestrator', Topics.sloTier) }, (e) =>
          this.onTierChange(e),
        ),
        this.bus.subscribe(Topics.breaker, { group: consumerGroup('orchestrator', Topics.breaker) }, (e) =>
          this.onBreakerChange(e),
        ),
      ])),
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
    const validity = (event as RunReport & { validity?: ReportedValidity }).validity;
    const invalid = measurementInvalidity(summary, validity);
    const requested = this.rerunRequested.get(event.runId);
    this.rerunRequested.delete(event.runId);
    const reason = [requested, invalid].filter((r): r is string => r !== undefined && r !== null).join('; ');
    if (reason) await this.considerRerun(event.campaignId, event.runId, reason);
  }

  private async onBreakerChange(event: BreakerChange): Promise<void> {
    if (event.to !== 'open') return;
    const { target, layer, node } = event.breaker;
    await this.requestRerun(
      event.runId,
      `breaker ${target}/${layer}/${node} ${event.from} -> open: ${event.reason}`,
    );
  }

  private async onTierChange(event: SloTierChange): Promise<void> {
    // The first tier a run enters is an assignment, not a change.
    if (event.from === null) return;
    this.logger.log(`run ${event.runId}: tier ${event.from} -> ${event.to} (${event.reason})`);
    await this.requestRerun(event.runId, `tier ${event.from} -> ${event.to}: ${event.reason}`);
  }

  /** A rerun is considered when the run ends (requests during it fold into the first), or now. */
  private async requestRerun(runId: string, reason: string): Promise<void> {
    const run = await this.runs.get(runId);
    if (!run) return;
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
    const rerunsStarted = history.filter((r) => r.trigger === 'rerun').length;
    const decision = decideRerun(
      campaign.spec.reruns,
      {
        rerunsStarted,
        // In memory (scheduled timer) or in storage (a rerun not yet ended, e.g. after a restart).
        rerunPending:
          this.pendingRerun.has(campaignId) ||
          history.some((r) => r.trigger === 'rerun' && (r.status === 'pending' || r.status === 'running')),
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
    const backoffMs = rerunBackoffMs(
      rerunsStarted,
      this.config.FATHOM_RERUN_BACKOFF_MS,
      this.config.FATHOM_RERUN_BACKOFF_MAX_MS,
    );
    const delayMs = Math.max(decision.delayMs, backoffMs);
    this.logger.log(`rerun of campaign ${campaignId} after run ${runId} in ${delayMs} ms: ${reason}`);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.campaignService
        .startRun(campaignId, campaign.spec, 'rerun', runId, reason)
        .then((r) => this.logger.log(`rerun ${r.runId} of campaign ${campaignId} started (${reason})`))
        .catch((error: Error) => {
          this.pendingRerun.delete(campaignId);
          this.logger.error(`rerun of campaign ${campaignId} failed to start: ${error.message}`);
        });
    }, delayMs);
    this.timers.add(timer);
  }
}
