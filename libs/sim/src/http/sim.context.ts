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

/**
 * `epochNowMs() - CLOCK_MONOTONIC ms`, constant for the process: performance.now() and
 * process.hrtime() both read libuv's monotonic clock. A client on the same host converts the
 * ground truth's epoch stamps to the shared monotonic clock with it, exactly; two processes'
 * `performance.timeOrigin` alone disagree by up to ~0.1 ms.
 */
export function epochMinusMonotonicMs(): number {
  return performance.timeOrigin - monotonicMinusPerfNowMs();
}

/**
 * `CLOCK_MONOTONIC ms - performance.now()`, read between two performance.now() calls. A thread
 * preempted between the reads (a VM's vCPU taken for 5 ms, measured on a 16-core guest) would
 * skew every stamp converted with it, so the narrowest of 64 readings is kept.
 */
export function monotonicMinusPerfNowMs(): number {
  let best = Infinity;
  let offset = 0;
  for (let i = 0; i < 64; i++) {
    const before = performance.now();
    const monotonicMs = Number(process.hrtime.bigint()) / 1e6;
    const after = performance.now();
    if (after - before < best) {
      best = after - before;
      offset = monotonicMs - (before + after) / 2;
    }
  }
  return offset;
}

/** Wall epoch ms with sub-ms precision. */
export function epochNowMs(): number {
  return performance.timeOrigin + performance.now();
}
