import { maxOf, type RootCauseCause } from '@fathom/contracts';
import { CauseThresholds } from '../cause-thresholds.constant';
import { median, ms, pct, range, type DiagnosisContext } from '../diagnosis.context';

/**
 * Token-stream interruption (spec flow, P99 not explained by a hop): responses that pause
 * mid-stream for at least `stallMs` (or 20 baseline gaps). Judged against a baseline only. A paused
 * client (the generator's own event loop blocked) stalls every stream and the first token alike;
 * a server-side stall leaves TTFT alone, so a TTFT jump rules it out, and so does a recent span
 * the generator judged client-limited (`DiagnosisContext.clientLimited`). Not named beside KV
 * pressure: a full cache preempts sequences, whose streams pause while they are recomputed (the
 * detection matrix's KV cells named stream-stall in 18 of 30 runs).
 */
export function streamStallCause(ctx: DiagnosisContext, kvPressure = false): RootCauseCause | null {
  const { recent, base, options } = ctx;
  const streamed = recent.digests.filter((d) => d.gapMaxMs !== null);
  const baseGap = base
    ? median(base.digests.map((d) => d.gapMedianMs).filter((g): g is number => g !== null))
    : null;
  const stallBound = Math.max(
    options.stallMs,
    baseGap !== null ? CauseThresholds.stallGapFactor * baseGap : 0,
  );
  const stalled = streamed.filter((d) => (d.gapMaxMs ?? 0) >= stallBound);
  const clientPaused = ctx.ttftJump !== null && ctx.ttftJump >= options.jumpFactor;
  if (
    kvPressure ||
    !ctx.hasBaseline ||
    clientPaused ||
    ctx.clientLimited !== null ||
    streamed.length < CauseThresholds.stallMinResponses ||
    stalled.length < CauseThresholds.stallMinStalled ||
    stalled.length / streamed.length < CauseThresholds.stallShare
  )
    return null;
  const share = stalled.length / streamed.length;
  const worst = maxOf(stalled.map((d) => d.gapMaxMs ?? 0));
  return {
    kind: 'stream-stall',
    title: 'token streams stall mid-response (output buffer not flushed)',
    confidence: Math.min(1, 0.55 + 0.4 * share),
    ...range(stalled, recent),
    evidence: [
      ctx.overBudget
        ? `${ctx.flowHead}: no hop's latency jumped (TTFT P99 ${ms(ctx.ttft)}, ITL P50 ${ms(ctx.itl)})`
        : ctx.flowHead,
      `token-stream interruption: ${stalled.length}/${streamed.length} responses (${pct(share)}) paused >= ${stallBound.toFixed(0)} ms, longest ${worst.toFixed(0)} ms (baseline gap median ${ms(baseGap)})`,
      ...ctx.gpuLines,
    ],
    figures: {
      stalledResponses: stalled.length,
      streamedResponses: streamed.length,
      stallShare: share,
      longestGapMs: worst,
      ...ctx.gpuFigures,
    },
    advice: [
      'look for output-stream buffer overflow or a proxy that buffers SSE (disable proxy buffering, flush per chunk)',
      'check the server for pauses between decode steps (GC, CPU contention on the API process, scheduler starvation)',
    ],
  };
}
