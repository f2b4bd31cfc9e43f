import { Module } from '@nestjs/common';
import { ApiTokenGuard } from '../api-token.guard';
import { ShadowController } from './shadow.controller';
import { ShadowService } from './shadow.service';

/** Shadow testing (part of the orchestrator): production requests against primary, secondary, candidate. */
@Module({
  controllers: [ShadowController],
  providers: [ShadowService, ApiTokenGuard],
})
export class ShadowModule {}
