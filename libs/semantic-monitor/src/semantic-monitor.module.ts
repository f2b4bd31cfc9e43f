import { Module, type DynamicModule } from '@nestjs/common';
import { SemanticMonitorService } from './semantic-monitor.service';
import { BaselineDriftService } from './baseline-drift.watch';
import { SEMANTIC_MONITOR_SETTINGS, type SemanticMonitorSettings } from './semantic-monitor.settings';

/** Token-level latency and semantic checks on the responses in the load stream. */
@Module({})
export class SemanticMonitorModule {
  static register(settings: SemanticMonitorSettings): DynamicModule {
    return {
      module: SemanticMonitorModule,
      providers: [
        { provide: SEMANTIC_MONITOR_SETTINGS, useValue: settings },
        SemanticMonitorService,
        BaselineDriftService,
      ],
    };
  }
}
