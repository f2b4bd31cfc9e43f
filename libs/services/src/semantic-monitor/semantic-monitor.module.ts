import { Module } from '@nestjs/common';
import { SemanticMonitorService } from './semantic-monitor.service';

/** Token-level latency and semantic checks on the responses in the load stream. */
@Module({ providers: [SemanticMonitorService] })
export class SemanticMonitorModule {}
