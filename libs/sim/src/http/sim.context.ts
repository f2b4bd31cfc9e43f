import { performance } from 'node:perf_hooks';
import type { SimConfig } from '../config/sim-config';
import type { ServingEngine } from '../engine/serving.engine';
import type { FaultController } from '../faults/fault.controller';
import type { VllmMetrics } from '../metrics/vllm.metrics';
import type { GroundTruthStore } from './ground-truth.store';

/** What the HTTP handlers share: one per running target. */
export interface SimContext {
  config: SimConfig;
  faults: FaultController;
  engine: ServingEngine;
  groundTruth: GroundTruthStore;
  metrics: VllmMetrics;
  nextRequestNumber(): number;
}

/** Wall epoch ms with sub-ms precision. */
export function epochNowMs(): number {
  return performance.timeOrigin + performance.now();
}
