import type { RootCauseCause } from '@fathom/contracts';
import { gpuCounterIncrease, gpuMax, gpuMean } from '../../evidence/run-timeline';
import { CauseThresholds } from '../cause-thresholds.constant';
import { iso, ms, type DiagnosisContext } from '../diagnosis.context';

/**
 * KV-cache pressure: the first hop (queue + prefill) grows because blocks run out. Named when the
 * cache's usage peaks near full while requests wait or running sequences are preempted.
 */
export function kvCachePressureCause(ctx: DiagnosisContext): RootCauseCause | null {
  const { recent, options } = ctx;
  const kvMax = gpuMax(recent.gpu, 'kv_cache_usage_ratio');
  const preemptions = gpuCounterIncrease(recent.gpu, 'preemptions_total');
  const waiting = gpuMean(recent.gpu, 'requests_waiting');
  const pressure =
    kvMax !== null &&
    kvMax >= CauseThresholds.kvUsagePeak &&
    ((preemptions ?? 0) > 0 || (waiting ?? 0) >= CauseThresholds.kvWaitingMean);
  if (!pressure) return null;
  const confidence = Math.min(
    1,
    0.55 +
      ((preemptions ?? 0) > 0 ? 0.2 : 0) +
      (ctx.overBudget ? 0.15 : 0) +
      ((ctx.ttftJump ?? 0) >= options.jumpFactor ? 0.1 : 0),
  );
  return {
    kind: 'kv-cache-pressure',
    title: 'KV cache exhausted: requests wait for blocks and running sequences are preempted',
    confidence,
    since: recent.fromMs,
    until: recent.toMs,
    evidence: [
      ctx.flowHead,
      `first hop (TTFT P99) ${ms(ctx.ttft)} vs baseline ${ms(ctx.ttftBase)}`,
      `KV-cache usage peak ${(kvMax * 100).toFixed(0)} %, ${preemptions ?? 0} preemptions, ${(waiting ?? 0).toFixed(1)} requests waiting on average`,
      ...ctx.gpuLines,
      `between ${iso(recent.fromMs)} and ${iso(recent.toMs)}`,
    ],
    figures: {
      kvUsagePeak: kvMax,
      preemptions: preemptions ?? 0,
      waitingMean: waiting ?? 0,
      ...(ctx.ttft !== null ? { ttftP99Ms: ctx.ttft } : {}),
      ...(ctx.ttftBase !== null ? { ttftP99BaselineMs: ctx.ttftBase } : {}),
      ...ctx.gpuFigures,
    },
    advice: [
      'give the server more KV cache (raise --gpu-memory-utilization, lower --max-model-len, or a larger GPU)',
      'lower the max batch (--max-num-seqs) so admitted sequences fit in the cache without preemption',
      'turn prefix caching on (--enable-prefix-caching) so shared prompt prefixes reuse blocks',
    ],
  };
}
