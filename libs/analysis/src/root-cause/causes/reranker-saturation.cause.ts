import { minOf, maxOf, type RootCauseCause } from '@fathom/contracts';
import { CauseThresholds } from '../cause-thresholds.constant';
import { pct, type DiagnosisContext } from '../diagnosis.context';

/** The reranker's concurrency cap (spec: a semaphore of 32, try-acquire) refuses calls busy. */
export function rerankerSaturationCause(ctx: DiagnosisContext): RootCauseCause | null {
  const rerank = ctx.calls.filter((c) => c.layer === 'rerank');
  const busy = rerank.filter((c) => !c.ok && (c.status === 503 || /busy/i.test(c.error ?? '')));
  if (
    rerank.length < CauseThresholds.rerankMinCalls ||
    busy.length / rerank.length < CauseThresholds.rerankBusyShare
  )
    return null;
  const share = busy.length / rerank.length;
  return {
    kind: 'reranker-saturation',
    title: 'reranker saturated: its concurrency cap refuses requests ("reranker busy")',
    confidence: Math.min(1, 0.6 + 0.4 * share),
    since: minOf(busy.map((c) => c.startedAt)),
    until: maxOf(busy.map((c) => c.at)),
    evidence: [
      `${busy.length}/${rerank.length} rerank calls (${pct(share)}) refused with 503 busy`,
      `example: ${busy[0].error ?? 'HTTP 503'}`,
    ],
    figures: { refused: busy.length, calls: rerank.length, share },
    advice: [
      "lower the callers' rerank concurrency below the cap (spec: semaphore of 32) or queue instead of failing fast",
      'add reranker replicas, or rerank fewer candidates per query (smaller top_n input)',
    ],
  };
}
