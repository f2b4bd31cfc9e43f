import type { CampaignSpec, RequestRecord } from '@fathom/contracts';
import type { ShardResult, WindowSnapshot } from '@fathom/load';
import type { GateState } from './shard-controls';

/** Messages between `EngineThread` (main thread) and `engine.worker` (the shard's worker thread). */

export interface EngineWorkerData {
  readonly spec: CampaignSpec;
  readonly shard: { index: number; count: number };
  readonly runId: string;
  readonly campaignId: string;
  readonly generatorId: string;
}

/**
 * Main -> worker. `start` (the shard) once the shard-started lifecycle is out; `abort` at any
 * time; `gate` (the breakers' closed paths, whole) and `gpu` (a GPU memory reading) whenever the
 * shard's controls change (see ShardControls).
 */
export type EngineCommand =
  | { type: 'start'; shard: EngineWorkerData }
  | { type: 'abort'; reason: string }
  | { type: 'gate'; gate: GateState }
  | { type: 'gpu'; gpuMemoryUsed: number };

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
