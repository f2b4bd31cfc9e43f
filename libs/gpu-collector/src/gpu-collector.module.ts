import { Module, type DynamicModule } from '@nestjs/common';
import { GpuCollectorService } from './gpu-collector.service';
import { GPU_COLLECTOR_SETTINGS, type GpuCollectorSettings } from './gpu-collector.settings';

/** GPU and inference-server telemetry, joined with the run that was going. */
@Module({})
export class GpuCollectorModule {
  static register(settings: GpuCollectorSettings): DynamicModule {
    return {
      module: GpuCollectorModule,
      providers: [{ provide: GPU_COLLECTOR_SETTINGS, useValue: settings }, GpuCollectorService],
    };
  }
}
