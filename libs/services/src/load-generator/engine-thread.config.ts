import type { ShardEngine } from './engine-thread';

export type EngineThreadMode = 'worker' | 'inline';

/**
 * FATHOM_ENGINE_THREAD: where a shard's load engine runs. `worker` (default): its own worker
 * thread, so bus I/O, encoding and the other services of an embedded process never stall the
 * engine's socket reads; `inline`: on the service's event loop, as before.
 */
export function engineThreadFromEnv(env: NodeJS.ProcessEnv = process.env): EngineThreadMode {
  const raw = env.FATHOM_ENGINE_THREAD;
  if (raw === undefined || raw === '') return 'worker';
  if (raw === 'worker' || raw === 'inline') return raw;
  throw new Error(`FATHOM_ENGINE_THREAD must be "worker" or "inline", got ${JSON.stringify(raw)}`);
}

/** Injection token of the `ShardEngine` the shard runner uses. */
export const SHARD_ENGINE = Symbol('SHARD_ENGINE');

export type { ShardEngine };
