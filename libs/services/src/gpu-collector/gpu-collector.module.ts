import { Module } from '@nestjs/common';
import { GpuCollectorService } from './gpu-collector.service';

/** GPU and inference-server telemetry, joined with the run that was going. */
@Module({ providers: [GpuCollectorService] })
export class GpuCollectorModule {}
