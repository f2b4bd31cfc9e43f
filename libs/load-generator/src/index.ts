export * from './load-generator.module';
export * from './load-generator.settings';
export { ShardRunnerService } from './shard-runner.service';
export { startEngineThreadEarly } from './engine-thread';
