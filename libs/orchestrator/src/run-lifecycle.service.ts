import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { InjectBus, consume, subscribeAll, type Bus, type Subscription } from '@fathom/bus';
import { CampaignRepository, RunRepository, createRepositories } from '@fathom/storage';
import {
  Topics,
  envelope,
  type BreakerChange,
  type RunReport,
  type SloTierChange,
  type RunLifecycle,
} from '@fathom/contracts';
import {
  campaignRunHistory,
  decideRerun,
  mayRerunAfter,
  measurementInvalidity,
  rerunReason,
  rerunRefusal,
  type ReportedValidity,
} from '@fathom/analysis';
import { CampaignService } from './campaign.service';
import { ORCHESTRATOR_SETTINGS, type OrchestratorSettings } from './orchestrator.settings';
import { RerunRepository, type ScheduledRerun } from '@fathom/storage';

/** How soon a due rerun whose campaign has a run open looks again. */
const RERUN_BUSY_RETRY_MS = 1000;

/**
 * Owns the run lifecycle: pending -> running on the first shard, completed/failed when the
 * analyzer's report arrives; and reruns when a run's SLO tier changed, a breaker opened, or the
 * report says the measurement itself was invalid, bounded by the campaign's rerun policy (cap,
 * cool-down, one pending at a time: the debounce) plus an exponential backoff. Each rerun
 * stores its reason and its parent run.
 *
 * Rerun decisions live in the database, not in this process: a request made while its run is
 * open, and a rerun waiting for its time, are stored (`RerunRepository`). On start, and every
 * FATHOM_RECONCILE_INTERVAL_MS, every waiting rerun gets a timer here; the timer that fires first
 * claims it (conditional update) in the transaction that creates its run, so a rerun decided
 * before a restart starts after it, once, however many orchestrators share the database.
 */
@Injectable()
export class RunLifecycleService implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(RunLifecycleService.name);
  private readonly subscriptions: Subscription[] = [];
  /** Timers of waiting reruns armed by this process, by scheduled-rerun id. */
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private resumeTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Runs a shard stopped on `slo.abortOnFail`, whose other shards were told to stop (once each). */
  private readonly stoppedOnSlo = new Set<string>();

  constructor(
    @InjectBus() private readonly bus: Bus,
    private readonly runs: RunRepository,
    private readonly campaigns: CampaignRepository,
    private readonly campaignService: CampaignService,
    private readonly reruns: RerunRepository,
    @Inject(ORCHESTRATOR_SETTINGS) private readonly config: OrchestratorSettings,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriptions.push(
      ...(await subscribeAll(this.bus, 'orchestrator', [
        consume(Topics.runLifecycle, (e) => this.onLifecycle(e)),
        consume(Topics.runReport, (e) => this.onReport(e)),
        consume(Topics.sloTier, (e) => this.onTierChange(e)),
        consume(Topics.breaker, (e) => this.onBreakerChange(e)),
      ])),
    );
  }

  /** Arms the reruns a previous orchestrator (or another one) decided and did not start. */
  async onApplicationBootstrap(): Promise<void> {
    await this.resumeWaiting();
    this.resumeTimer = setInterval(() => void this.resumeWaiting(), this.config.FATHOM_RECONCILE_INTERVAL_MS);
    this.resumeTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    if (this.resumeTimer) clearInterval(this.resumeTimer);
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.all(this.subscriptions.map((s) => s.close()));
  }

  private async resumeWaiting(): Promise<void> {
    try {
      for (const rerun of await this.reruns.waiting()) this.arm(rerun);
    } catch (error) {
      this.logger.error(`reading waiting reruns failed: ${(error as Error).message}`);
    }
  }

  /** A timer for a waiting rerun at its due time (at once when it is past), once per process. */
  private arm(rerun: ScheduledRerun): void {
    if (this.closed || this.timers.has(rerun.id)) return;
    const timer = setTimeout(
      () => {
        void this.startWaiting(rerun).then((busy) => {
          this.timers.delete(rerun.id);
          if (busy) this.arm({ ...rerun, dueAt: Date.now() + RERUN_BUSY_RETRY_MS });
        });
      },
      Math.max(0, rerun.dueAt - Date.now()),
    );
    this.timers.set(rerun.id, timer);
  }

  /**
   * Starts a waiting rerun unless another orchestrator (or an earlier life of this one) did.
   * True when it must wait: another run of its campaign is open.
   */
  private async startWaiting(rerun: ScheduledRerun): Promise<boolean> {
    const { campaignId, parentRunId, reason } = rerun;
    try {
      const campaign = await this.campaigns.get(campaignId);
      if (!campaign) return false;
      // One open run per campaign (as for alerts and schedules): a rerun that comes due while
      // another run of its campaign is pending or running waits for it, unclaimed, and is tried
      // again after RERUN_BUSY_RETRY_MS (or by the next orchestrator to look).
      const admitted = await this.campaignService.startUnless(
        { campaignId, trigger: 'rerun', parentRunId, reason },
        campaign.spec,
        async (tx, run) => {
          const open = await createRepositories(tx).runs.list({ campaignId, status: ['pending', 'running'] });
          if (open.some((other) => other.id !== run.id)) return 'campaign busy';
          return (await new RerunRepository(tx).claim(rerun.id, run.id)) ? null : 'already started';
        },
      );
      if (admitted.started) {
        this.logger.log(`rerun ${admitted.started.runId} of campaign ${campaignId} started (${reason})`);
      }
      return admitted.refused === 'campaign busy';
    } catch (error) {
      this.logger.error(`rerun of campaign ${campaignId} failed to start: ${(error as Error).message}`);
      return false;
    }
  }

  private async onLifecycle(event: RunLifecycle): Promise<void> {
    if (event.phase === 'shard-started') {
      await this.runs.transition(event.runId, 'running', { at: event.emittedAt });
    }
    if (event.endReason === 'slo-failed' && !this.stoppedOnSlo.has(event.runId)) {
      // k6-style thresholds stop the whole run: a shard that judged the campaign's SLO failed
      // (slo.abortOnFail) stopped itself; the others, on any generator, are stopped here. The run
      // is not marked aborted (no user asked): its summary ends with endReason slo-failed.
      this.stoppedOnSlo.add(event.runId);
      if (this.stoppedOnSlo.size > 10_000) this.stoppedOnSlo.delete(this.stoppedOnSlo.values().next().value!);
      await this.bus.publish(Topics.runControl, {
        ...envelope(event.campaignId, event.runId),
        kind: 'abort',
        reason: 'slo.abortOnFail: a shard found the campaign SLO failed',
      });
      this.logger.log(`run ${event.runId}: slo.abortOnFail, the other shards are stopped`);
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
    } else if (summary.status === 'partial') {
      await this.runs.transition(event.runId, 'partial', {
        reason: summary.reason ?? 'partial',
        at: summary.endedAt ?? undefined,
      });
    }
    if (!mayRerunAfter(summary.status)) {
      const dropped = await this.reruns.takeRequest(event.runId);
      if (dropped) this.logger.log(`no rerun after aborted run ${event.runId} (it asked: ${dropped})`);
      return;
    }
    const validity = (event as RunReport & { validity?: ReportedValidity }).validity;
    const refusal = rerunRefusal(validity);
    if (refusal) {
      const requested = await this.reruns.takeRequest(event.runId);
      this.logger.warn(`run ${event.runId}: ${refusal}${requested ? ` (it asked: ${requested})` : ''}`);
      return;
    }
    const invalid = measurementInvalidity(summary, validity);
    const reason = rerunReason(await this.reruns.takeRequest(event.runId), invalid);
    if (reason !== null) await this.considerRerun(event.campaignId, event.runId, reason);
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

  /**
   * A rerun is considered when the run ends (requests during it fold into the first), or now.
   * A change reported for an ended run while another run of its campaign is open (a schedule's,
   * an alert's) is folded into that open run's request, so it is considered when that run ends
   * instead of being dropped as "the run is still going".
   */
  private async requestRerun(runId: string, reason: string): Promise<void> {
    const run = await this.runs.get(runId);
    if (!run || !mayRerunAfter(run.status)) return;
    const open =
      run.status === 'pending' || run.status === 'running'
        ? run
        : (await this.runs.list({ campaignId: run.campaignId, status: ['pending', 'running'] }))[0];
    if (open !== undefined) {
      await this.reruns.request(open.id, reason);
    } else {
      await this.considerRerun(run.campaignId, run.id, reason);
    }
  }

  private async considerRerun(campaignId: string, runId: string, reason: string): Promise<void> {
    const campaign = await this.campaigns.get(campaignId);
    if (!campaign) return;
    const history = campaignRunHistory(
      await this.runs.tally(campaignId),
      await this.reruns.hasWaiting(campaignId),
    );
    const decision = decideRerun(
      {
        ...campaign.spec.reruns,
        backoffMs: this.config.FATHOM_RERUN_BACKOFF_MS,
        backoffMaxMs: this.config.FATHOM_RERUN_BACKOFF_MAX_MS,
      },
      history,
      Date.now(),
    );
    if (!decision.start) {
      this.logger.log(`no rerun of campaign ${campaignId} after run ${runId}: ${decision.reason}`);
      return;
    }
    const { delayMs } = decision;
    const scheduled = await this.reruns.schedule({
      campaignId,
      parentRunId: runId,
      reason,
      dueAt: Date.now() + delayMs,
    });
    if (!scheduled) {
      // Another orchestrator scheduled one between the look at the history and this insert.
      this.logger.log(`no rerun of campaign ${campaignId} after run ${runId}: a rerun is already pending`);
      return;
    }
    this.logger.log(`rerun of campaign ${campaignId} after run ${runId} in ${delayMs} ms: ${reason}`);
    this.arm(scheduled);
  }
}
