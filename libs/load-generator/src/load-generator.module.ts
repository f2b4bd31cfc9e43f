import { Module, type DynamicModule } from '@nestjs/common';
import { InlineShardHost, ThreadShardHost, type ShardHost } from './engine-thread';
import { SHARD_HOST } from './engine-thread.config';
import { ShardRunnerService } from './shard-runner.service';
import { LOAD_GENERATOR_SETTINGS, type LoadGeneratorSettings } from './load-generator.settings';
import { GenAiClientTelemetry, edgeSamplingOptions } from '@fathom/observability';
import { GENAI_TELEMETRY } from './genai.sink';

/** Runs load plan shards against targets and streams telemetry. */
@Module({})
export class LoadGeneratorModule {
  static register(settings: LoadGeneratorSettings): DynamicModule {
    return {
      module: LoadGeneratorModule,
      providers: [
        { provide: LOAD_GENERATOR_SETTINGS, useValue: settings },
        ShardRunnerService,
        {
          provide: SHARD_HOST,
          useFactory: (): ShardHost =>
            settings.FATHOM_ENGINE_THREAD === 'inline' ? new InlineShardHost() : new ThreadShardHost(),
        },
        {
          provide: GENAI_TELEMETRY,
          // OpenTelemetry GenAI client metrics and spans, exported when an OTLP endpoint is set.
          useFactory: () =>
            GenAiClientTelemetry.create(
              settings.OTEL_EXPORTER_OTLP_ENDPOINT,
              'fathom-load-generator',
              edgeSamplingOptions(settings),
            ),
        },
      ],
    };
  }
}
