import type { RootCauseCause } from '@fathom/contracts';
import { gpuCounterIncrease, type GpuPoint } from '../../evidence/run-timeline';
import { CauseThresholds } from '../cause-thresholds.constant';
import { iso, ms, type DiagnosisContext } from '../diagnosis.context';

/**
 * Decode slowed down (engine step time): P99 is over budget and the hop that jumped is
 * inter-token latency. With DRAM saturated (spec flow: "is GPU memory bandwidth saturated?") it
 * is `dram-bandwidth-saturation`, else `engine-step-slowdown`. Not named beside KV pressure,
 * which explains the same rise, nor when the server's own inter-token latency (its histogram's
 * sum over count, where it exposes one) did not jump: then the gaps grew between the server and
 * the client (a starved client, the network), not in the engine; nor while the generator judged
 * the recent span client-limited (`DiagnosisContext.clientLimited`).
 */
export function decodeSlowdownCause(ctx: DiagnosisContext, kvPressure: boolean): RootCauseCause | null {
  const { itl, itlBase, itlJump, recent } = ctx;
  if (
    kvPressure ||
    ctx.clientLimited !== null ||
    !ctx.overBudget ||
    itlJump === null ||
    itlJump < ctx.options.jumpFactor ||
    itl === null ||
    itlBase === null ||
    itl - itlBase < CauseThresholds.decodeJumpMinMs
  )
    return null;
  const server = serverItlMs(recent.gpu);
  const serverBase = ctx.base ? serverItlMs(ctx.base.gpu) : null;
  const serverJump = server !== null && serverBase !== null && serverBase > 0 ? server / serverBase : null;
  if (serverJump !== null && serverJump < ctx.options.jumpFactor) return null;
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
      ...(serverJump !== null
        ? [
            `the server's own inter-token latency ${ms(server)} vs baseline ${ms(serverBase)} (x${serverJump.toFixed(1)}): the engine slowed`,
          ]
        : []),
      ...ctx.gpuLines,
      `between ${iso(recent.fromMs)} and ${iso(recent.toMs)}`,
    ],
    figures: {
      itlP50Ms: itl,
      itlP50BaselineMs: itlBase,
      itlJump,
      ...(serverJump !== null ? { serverItlMs: server!, serverItlBaselineMs: serverBase! } : {}),
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

/** The server's mean inter-token latency over the points (ms): its ITL histogram's sum over count. */
function serverItlMs(points: readonly GpuPoint[]): number | null {
  const sum = gpuCounterIncrease(points, 'itl_sum_s');
  const count = gpuCounterIncrease(points, 'itl_count_total');
  return sum === null || count === null || count <= 0 ? null : (1000 * sum) / count;
}
