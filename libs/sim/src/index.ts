export { startSimTarget, type SimTarget, type SimTargetOptions } from './http/sim.server';
export {
  resolveSimConfig,
  simConfigSchema,
  type SimConfig,
  type SimConfigInput,
  type DeepPartial,
} from './config/sim-config';
export { FaultController, type ActiveFault } from './faults/fault.controller';
export {
  faultSpecSchema,
  FAULT_KINDS,
  type FaultKind,
  type FaultSpec,
  type FaultSpecInput,
} from './faults/fault.types';
export {
  ServingEngine,
  type SequenceRequest,
  type SequenceTiming,
  type EngineStats,
} from './engine/serving.engine';
export { RealClock, VirtualClock, type EngineClock } from './engine/clock';
export { KvCache } from './engine/kv-cache';
export {
  planOutput,
  topLogprobs,
  type OutputPlan,
  type PlannedToken,
  type TokenSpan,
} from './text/output.generator';
export type { GroundTruthRecord } from './http/ground-truth.store';
export { monotonicMinusPerfNowMs } from './http/sim.context';
