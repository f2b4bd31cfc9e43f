import type { RootCauseCause } from '@fathom/contracts';
import { CauseThresholds } from '../cause-thresholds.constant';
import { pct, type DiagnosisContext } from '../diagnosis.context';

/** The inference server answers completions with 5xx. */
export function serverErrorsCause(ctx: DiagnosisContext): RootCauseCause | null {
  const llm = ctx.calls.filter((c) => c.layer === 'llm');
  const failed = llm.filter((c) => !c.ok && c.status >= 500);
  if (
    llm.length < CauseThresholds.serverErrorMinCalls ||
    failed.length / llm.length < CauseThresholds.serverErrorShare
  )
    return null;
  const share = failed.length / llm.length;
  return {
    kind: 'server-errors',
    title: 'the inference server answers with 5xx errors',
    confidence: Math.min(1, 0.5 + share / 2),
    since: Math.min(...failed.map((c) => c.startedAt)),
    until: Math.max(...failed.map((c) => c.at)),
    evidence: [
      `${failed.length}/${llm.length} completions (${pct(share)}) failed with 5xx`,
      `example: ${failed[0].error ?? ''}`,
    ],
    figures: { failed: failed.length, calls: llm.length, share },
    advice: ['read the server log for the failing requests; check health checks and restarts of the engine'],
  };
}
