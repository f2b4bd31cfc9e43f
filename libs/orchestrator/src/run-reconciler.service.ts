import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { CampaignRepository, RunReportRepository, RunRepository } from '@fathom/storage';
import { RunSummarySchema, type RunSummary } from '@fathom/contracts';
import { ORCHESTRATOR_SETTINGS, type OrchestratorSettings } from './orchestrator.settings';
import { CampaignService } from './campaign.service';
import { reconcileOpenRun } from './run-reconcile.util';

/**
 * Keeps run states true across orchestrator restarts: on start, and then every
 * FATHOM_RECONCILE_INTERVAL_MS, the plans still owed (runs created whose plan never reached the
 * bus: the orchestrator died in between, or the bus was down) are published, then every pending
 * or running run is checked against the analyzer's stored report (applied when the report event
 * was missed) and its deadline (failed with the reason when nothing can be running it any
 * more). Run states live only in the database, so a restarted orchestrator serves them as they
 * were.
 */
@Injectable()
export class RunReconcilerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(RunReconcilerService.name);
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;

  constructor(
    @Inject(ORCHESTRATOR_SETTINGS) private readonly config: OrchestratorSettings,
    private readonly runs: RunRepository,
    private readonly campaigns: CampaignRepository,
    private readonly reports: RunReportRepository,
    private readonly campaignService: CampaignService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.sweep();
    this.timer = setInterval(() => void this.sweep(), this.config.FATHOM_RECONCILE_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
  }

  /** One pass over the open runs (a pass already under way is joined, not doubled). */
  sweep(now = Date.now()): Promise<void> {
    this.sweeping ??= this.reconcileAll(now).finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private async reconcileAll(now: number): Promise<void> {
    try {
      const published = await this.campaignService.handOutOwedPlans();
      if (published > 0) this.logger.log(`published ${published} owed run plan(s)`);
    } catch (error) {
      this.logger.error(`publishing owed run plans failed: ${(error as Error).message}`);
    }
    try {
      const open = await this.runs.list({ status: ['pending', 'running'] });
      for (const run of open) {
        const campaign = await this.campaigns.get(run.campaignId);
        const summary = await this.storedSummary(run.id);
        const decision = reconcileOpenRun(
          run,
          campaign?.spec.load.durationMs ?? null,
          summary,
          now,
          this.config.FATHOM_RUN_GRACE_MS,
          this.config.FATHOM_RUN_START_GRACE_MS,
        );
        if (decision.action === 'apply-report' && summary) {
          await this.runs.saveSummary(run.id, summary);
          if (decision.status !== 'aborted' && run.status === 'pending') {
            await this.runs.transition(run.id, 'running', { at: run.createdAt });
          }
          const changed = await this.runs.transition(run.id, decision.status, {
            reason: decision.reason ?? undefined,
            at: decision.at ?? undefined,
          });
          if (changed) this.logger.log(`run ${run.id}: ${decision.status} from its stored report`);
        } else if (decision.action === 'fail') {
          if (await this.runs.transition(run.id, 'failed', { reason: decision.reason })) {
            this.logger.warn(`run ${run.id}: failed: ${decision.reason}`);
          }
        }
      }
    } catch (error) {
      this.logger.error(`reconciling open runs failed: ${(error as Error).message}`);
    }
  }

  private async storedSummary(runId: string): Promise<RunSummary | null> {
    const report = await this.reports.latest(runId);
    const document = report?.document as { summary?: unknown } | null | undefined;
    const parsed = RunSummarySchema.safeParse(document?.summary);
    return parsed.success ? parsed.data : null;
  }
}
