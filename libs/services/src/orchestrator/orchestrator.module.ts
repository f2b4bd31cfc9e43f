import { Module } from '@nestjs/common';
import { CampaignController } from './campaign.controller';
import { RunController } from './run.controller';
import { CampaignService } from './campaign.service';
import { RunLifecycleService } from './run-lifecycle.service';
import { API_TOKEN, ApiTokenGuard } from './api-token.guard';

/** REST API for campaigns and runs; the run lifecycle and reruns. */
@Module({
  controllers: [CampaignController, RunController],
  providers: [
    CampaignService,
    RunLifecycleService,
    ApiTokenGuard,
    { provide: API_TOKEN, useFactory: () => process.env.FATHOM_API_TOKEN ?? null },
  ],
  exports: [CampaignService],
})
export class OrchestratorModule {}
