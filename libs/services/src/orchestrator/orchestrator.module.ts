import { Module } from '@nestjs/common';
import { CampaignController } from './campaign.controller';
import { RunController } from './run.controller';
import { AlertController } from './alert.controller';
import { ScheduleController } from './schedule.controller';
import { DocsController } from './docs.controller';
import { CampaignService } from './campaign.service';
import { RunLifecycleService } from './run-lifecycle.service';
import { RunReconcilerService } from './run-reconciler.service';
import { SchedulerService } from './scheduler.service';
import { AlertService } from './alert.service';
import { AlertRepository } from './alert.repository';
import { ScheduleRepository } from './schedule.repository';
import { RerunRepository } from './rerun.repository';
import { DATABASE } from '../storage/storage.module';
import type { Database } from '@fathom/storage';
import { API_TOKEN, ApiTokenGuard } from './api-token.guard';
import { AlertWebhookGuard } from './alert-webhook.guard';
import { ORCHESTRATOR_CONFIG, parseOrchestratorEnv } from './orchestrator.config';
import { OPENAPI_EXTENSIONS } from './docs.controller';
import { ShadowModule } from '../shadow/shadow.module';
import { SHADOW_OPENAPI } from '../shadow/shadow.openapi';

/** REST API for campaigns, runs, schedules and alert rules; the run lifecycle, reruns, restarts. */
@Module({
  imports: [ShadowModule],
  controllers: [CampaignController, RunController, AlertController, ScheduleController, DocsController],
  providers: [
    CampaignService,
    RunLifecycleService,
    RunReconcilerService,
    SchedulerService,
    AlertService,
    AlertRepository,
    ScheduleRepository,
    { provide: RerunRepository, inject: [DATABASE], useFactory: (db: Database) => new RerunRepository(db) },
    ApiTokenGuard,
    AlertWebhookGuard,
    { provide: API_TOKEN, useFactory: () => process.env.FATHOM_API_TOKEN ?? null },
    { provide: OPENAPI_EXTENSIONS, useValue: SHADOW_OPENAPI },
    { provide: ORCHESTRATOR_CONFIG, useFactory: () => parseOrchestratorEnv(process.env) },
  ],
  exports: [CampaignService],
})
export class OrchestratorModule {}
