import type { RootCauseCause } from '@fathom/contracts';
import type { RunTimeline } from '../evidence/run-timeline';
import { capacitySaturationCause } from './causes/capacity-saturation.cause';
import { errorClassCauses } from './causes/error-classes.cause';
import { agentWorkflowCause } from './causes/agent-workflow.cause';
import { decodeSlowdownCause } from './causes/decode-slowdown.cause';
import { hallucinationRiseCause } from './causes/hallucination-rise.cause';
import { kvCachePressureCause } from './causes/kv-cache-pressure.cause';
import { promptExplosionCause } from './causes/prompt-explosion.cause';
import { rerankerSaturationCause } from './causes/reranker-saturation.cause';
import { retrievalMismatchCause } from './causes/retrieval-mismatch.cause';
import { streamInterruptionCause } from './causes/stream-interruption.cause';
import { streamStallCause } from './causes/stream-stall.cause';
import { toolSchemaDriftCause } from './causes/tool-schema-drift.cause';
import { DEFAULT_ROOT_CAUSE_OPTIONS, diagnosisContext, type RootCauseOptions } from './diagnosis.context';

export { DEFAULT_ROOT_CAUSE_OPTIONS, type RootCauseOptions } from './diagnosis.context';
export { CauseThresholds } from './cause-thresholds.constant';

/**
 * The spec's root-cause flow over a recent span against the run's own baseline:
 *   P99 over budget (or jumped)? -> which hop jumped: first hop (TTFT: queueing and prefill) or
 *   decode (inter-token latency) -> SM heat map -> DRAM bandwidth saturated?
 *   otherwise -> token-stream interruption rate -> stalls / truncations -> DRAM saturated?
 * and the layer-level faults the flow does not cover. One function per cause (./causes), each
 * with its thresholds named in `CauseThresholds`. Returns causes ranked by confidence, each with
 * its evidence, figures, time range and advice. Pure: the same timeline gives the same causes.
 */
export function diagnose(
  timeline: RunTimeline,
  nowMs: number,
  options: RootCauseOptions = DEFAULT_ROOT_CAUSE_OPTIONS,
): RootCauseCause[] {
  const ctx = diagnosisContext(timeline, nowMs, options);
  if (!ctx) return [];
  const kv = kvCachePressureCause(ctx);
  const causes = [
    kv,
    decodeSlowdownCause(ctx, kv !== null),
    capacitySaturationCause(ctx, kv !== null),
    streamStallCause(ctx, kv !== null),
    streamInterruptionCause(ctx),
    rerankerSaturationCause(ctx),
    agentWorkflowCause(ctx),
    toolSchemaDriftCause(ctx),
    retrievalMismatchCause(ctx),
    hallucinationRiseCause(ctx),
    ...errorClassCauses(ctx),
    promptExplosionCause(ctx),
  ].filter((c): c is RootCauseCause => c !== null);
  return causes.sort((a, b) => b.confidence - a.confidence);
}

/** A cause as a report keeps it: the strongest verdict seen, and when it was first named. */
export interface TrackedCause extends RootCauseCause {
  /** Wall-clock epoch ms when the analyzer first named this cause. */
  readonly namedAt: number;
}

/**
 * Accumulates live diagnoses: each kind keeps its strongest verdict, the first time it was
 * named, and its widest time range. `observe` says whether the ranked set changed (a new kind,
 * or a new top), which is when the analyzer publishes.
 */
export class RootCauseTracker {
  private readonly causes = new Map<string, TrackedCause>();
  private top: string | null = null;

  observe(diagnosis: readonly RootCauseCause[], namedAt: number): boolean {
    let changed = false;
    for (const cause of diagnosis) {
      const seen = this.causes.get(cause.kind);
      if (!seen) {
        this.causes.set(cause.kind, { ...cause, namedAt });
        changed = true;
      } else {
        const stronger = cause.confidence > seen.confidence ? cause : seen;
        this.causes.set(cause.kind, {
          ...stronger,
          namedAt: seen.namedAt,
          since: Math.min(seen.since, cause.since),
          until: Math.max(seen.until, cause.until),
        });
      }
    }
    const top = this.ranked()[0]?.kind ?? null;
    if (top !== this.top) {
      this.top = top;
      changed = true;
    }
    return changed;
  }

  ranked(): TrackedCause[] {
    return [...this.causes.values()].sort((a, b) => b.confidence - a.confidence || a.namedAt - b.namedAt);
  }
}
