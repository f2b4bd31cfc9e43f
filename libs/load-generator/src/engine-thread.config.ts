import type { ShardEngine } from './engine-thread';

export type EngineThreadMode = 'worker' | 'inline';

/** Injection token of the `ShardEngine` the shard runner uses. */
export const SHARD_ENGINE = Symbol('SHARD_ENGINE');

export type { ShardEngine };
