import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { RunRepository } from '@fathom/storage';
import { CampaignService } from './campaign.service';
import { ORCHESTRATOR_SETTINGS, type OrchestratorSettings } from './orchestrator.settings';
import { ScheduleRepository } from '@fathom/storage';
import { decideSchedule } from './schedule.util';

/** Starts the runs of due schedules every FATHOM_SCHEDULER_TICK_MS; state is in the database only. */
@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(SchedulerService.name);
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;

  constructor(
    @Inject(ORCHESTRATOR_SETTINGS) private readonly config: OrchestratorSettings,
    private readonly schedules: ScheduleRepository,
    private readonly runs: RunRepository,
    private readonly campaigns: CampaignService,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.tick(), this.config.FATHOM_SCHEDULER_TICK_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
  }

  /** One look at the due schedules (a tick already under way is joined). */
  tick(now = Date.now()): Promise<void> {
    this.ticking ??= this.startDue(now).finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async startDue(now: number): Promise<void> {
    try {
      for (const schedule of await this.schedules.due(now)) {
        const history = await this.runs.list({ campaignId: schedule.campaignId, limit: 20 });
        const busy = history.some((r) => r.status === 'pending' || r.status === 'running');
        const ended = history.map((r) => r.endedAt).filter((t): t is number => t !== null);
        const decision = decideSchedule(schedule, busy, ended.length ? Math.max(...ended) : null, now);
        if (decision.nextRunAt === schedule.nextRunAt && !decision.start) continue;
        if (!(await this.schedules.advance(schedule.id, schedule.nextRunAt, decision.nextRunAt))) continue;
        if (!decision.start) {
          this.logger.log(`schedule ${schedule.id}: ${decision.why}`);
          continue;
        }
        const started = await this.campaigns.startStored(
          schedule.campaignId,
          'schedule',
          `schedule ${schedule.id} (${schedule.mode})`,
        );
        if (started) await this.schedules.setLastRun(schedule.id, started.runId);
        else {
          this.logger.warn(`schedule ${schedule.id}: campaign ${schedule.campaignId} is gone; disabling`);
          await this.schedules.disable(schedule.id);
        }
      }
    } catch (error) {
      this.logger.error(`scheduler tick failed: ${(error as Error).message}`);
    }
  }
}
