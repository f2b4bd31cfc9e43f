import { Module, type DynamicModule } from '@nestjs/common';
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
import { API_TOKEN, ApiTokenGuard } from './api-token.guard';
import { AlertWebhookGuard } from './alert-webhook.guard';
import { ORCHESTRATOR_SETTINGS, type OrchestratorSettings } from './orchestrator.settings';
import { OPENAPI_EXTENSIONS } from './docs.controller';
import { ShadowModule } from './shadow/shadow.module';
import { SHADOW_OPENAPI } from './shadow/shadow.openapi';
import { ADMISSION_POLICY, admissionPolicyOf } from './campaign-admission';

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
    ApiTokenGuard,
    AlertWebhookGuard,
    { provide: OPENAPI_EXTENSIONS, useValue: SHADOW_OPENAPI },
  ],
  exports: [CampaignService],
})
export class OrchestratorModule {
  static register(settings: OrchestratorSettings): DynamicModule {
    return {
      module: OrchestratorModule,
      global: true,
      providers: [
        { provide: ORCHESTRATOR_SETTINGS, useValue: settings },
        { provide: API_TOKEN, useValue: settings.FATHOM_API_TOKEN ?? null },
        { provide: ADMISSION_POLICY, useValue: admissionPolicyOf(settings) },
      ],
      exports: [ORCHESTRATOR_SETTINGS, API_TOKEN, ADMISSION_POLICY],
    };
  }
}
