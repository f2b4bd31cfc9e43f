import { Module } from '@nestjs/common';
import { SemanticMonitorService } from './semantic-monitor.service';
import { BaselineDriftService } from './baseline-drift.watch';

/** Token-level latency and semantic checks on the responses in the load stream. */
@Module({ providers: [SemanticMonitorService, BaselineDriftService] })
export class SemanticMonitorModule {}
