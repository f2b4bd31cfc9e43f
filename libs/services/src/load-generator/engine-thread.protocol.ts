import type { CampaignSpec, RequestRecord } from '@fathom/contracts';
import type { ShardResult, WindowSnapshot } from '@fathom/load';

/** Messages between `EngineThread` (main thread) and `engine.worker` (the shard's worker thread). */

export interface EngineWorkerData {
  readonly spec: CampaignSpec;
  readonly shard: { index: number; count: number };
  readonly runId: string;
  readonly campaignId: string;
  readonly generatorId: string;
}

/** Main -> worker. `start` (the shard) once the shard-started lifecycle is out; `abort` at any time. */
export type EngineCommand = { type: 'start'; shard: EngineWorkerData } | { type: 'abort'; reason: string };

/**
 * Worker -> main, in the order the engine produced them: every `records` and `window` message
 * of a shard arrives before its `result` (or `failed`), so the counts it carries are exact.
 */
export type EngineReport =
  /** The engine's code is loaded; it starts on `start`. */
  | { type: 'ready' }
  | { type: 'records'; records: RequestRecord[] }
  | { type: 'window'; window: WindowSnapshot }
  | { type: 'result'; result: ShardResult }
  | { type: 'failed'; message: string };
