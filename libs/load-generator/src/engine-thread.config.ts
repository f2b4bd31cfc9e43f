import type { ShardHost } from './engine-thread';

export type EngineThreadMode = 'worker' | 'inline';

/** Injection token of the `ShardHost` the shard runner uses. */
export const SHARD_HOST = Symbol('SHARD_HOST');

export type { ShardHost };
