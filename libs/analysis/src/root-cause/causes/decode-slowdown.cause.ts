import type { RootCauseCause } from '@fathom/contracts';
import { CauseThresholds } from '../cause-thresholds.constant';
import { iso, ms, type DiagnosisContext } from '../diagnosis.context';

/**
 * Decode slowed down (engine step time): P99 is over budget and the hop that jumped is
 * inter-token latency. With DRAM saturated (spec flow: "is GPU memory bandwidth saturated?") it
 * is `dram-bandwidth-saturation`, else `engine-step-slowdown`. Not named beside KV pressure,
 * which explains the same rise.
 */
export function decodeSlowdownCause(ctx: DiagnosisContext, kvPressure: boolean): RootCauseCause | null {
  const { itl, itlBase, itlJump, recent } = ctx;
  if (
    kvPressure ||
    !ctx.overBudget ||
    itlJump === null ||
    itlJump < ctx.options.jumpFactor ||
    itl === null ||
    itlBase === null ||
    itl - itlBase < CauseThresholds.decodeJumpMinMs
  )
    return null;
  const bandwidth = ctx.dramSaturated;
  return {
    kind: bandwidth ? 'dram-bandwidth-saturation' : 'engine-step-slowdown',
    title: bandwidth
      ? 'decode is memory-bandwidth bound: DRAM saturated'
      : 'every engine step got slower (decode latency jumped) without KV pressure or bandwidth saturation',
    confidence: Math.min(1, 0.5 + 0.1 * Math.min(4, itlJump)),
    since: recent.fromMs,
    until: recent.toMs,
    evidence: [
      ctx.flowHead,
      `hop that jumped: decode, inter-token latency P50 ${ms(itl)} vs baseline ${ms(itlBase)} (x${itlJump.toFixed(1)})`,
      `first hop (TTFT P99) ${ms(ctx.ttft)} vs baseline ${ms(ctx.ttftBase)}`,
      ...ctx.gpuLines,
      `between ${iso(recent.fromMs)} and ${iso(recent.toMs)}`,
    ],
    figures: {
      itlP50Ms: itl,
      itlP50BaselineMs: itlBase,
      itlJump,
      ...(ctx.p99 !== null ? { e2eP99Ms: ctx.p99 } : {}),
      ...ctx.gpuFigures,
    },
    advice: bandwidth
      ? [
          'lower the max batch (--max-num-seqs): fewer sequences read less KV per step',
          'quantise the KV cache (fp8) to halve the bytes read per token',
        ]
      : [
          'compare the SM heat map with the baseline: a co-tenant, throttling (clocks, power) or a slower kernel build explains a uniform step-time rise',
          'lower the max batch (--max-num-seqs) to bring inter-token latency back under budget',
        ],
  };
}
