import { Module } from '@nestjs/common';
import { InlineShardEngine, ThreadShardEngine, type ShardEngine } from './engine-thread';
import { SHARD_ENGINE, engineThreadFromEnv } from './engine-thread.config';
import { ShardRunnerService } from './shard-runner.service';

/** Runs load plan shards against targets and streams telemetry. */
@Module({
  providers: [
    ShardRunnerService,
    {
      provide: SHARD_ENGINE,
      // Read once at boot: a bad value stops the service from starting.
      useFactory: (): ShardEngine =>
        engineThreadFromEnv() === 'inline' ? new InlineShardEngine() : new ThreadShardEngine(),
    },
  ],
})
export class LoadGeneratorModule {}
