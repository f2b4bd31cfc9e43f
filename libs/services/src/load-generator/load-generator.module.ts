import { Module } from '@nestjs/common';
import { ShardRunnerService } from './shard-runner.service';

/** Runs load plan shards against targets and streams telemetry. */
@Module({ providers: [ShardRunnerService] })
export class LoadGeneratorModule {}
