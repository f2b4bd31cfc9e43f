import { Module } from '@nestjs/common';
import { API_TOKEN, ApiTokenGuard } from '../orchestrator/api-token.guard';
import { ShadowController } from './shadow.controller';
import { ShadowRepository } from './shadow.repository';
import { ShadowService } from './shadow.service';

/** Shadow testing (part of the orchestrator): production requests against primary, secondary, candidate. */
@Module({
  controllers: [ShadowController],
  providers: [
    ShadowService,
    ShadowRepository,
    ApiTokenGuard,
    { provide: API_TOKEN, useFactory: () => process.env.FATHOM_API_TOKEN ?? null },
  ],
})
export class ShadowModule {}
