import type { RootCauseCause } from '@fathom/contracts';
import { CauseThresholds } from '../cause-thresholds.constant';
import { pct, range, type DiagnosisContext } from '../diagnosis.context';

/** Token streams that end early (truncated) or carry malformed SSE events. */
export function streamInterruptionCause(ctx: DiagnosisContext): RootCauseCause | null {
  const { recent } = ctx;
  const interrupted = recent.digests.filter(
    (d) => d.errorClass === 'stream-truncated' || d.errorClass === 'malformed-sse',
  );
  if (
    recent.digests.length < CauseThresholds.interruptionMinResponses ||
    interrupted.length / recent.digests.length < CauseThresholds.interruptionShare
  )
    return null;
  const share = interrupted.length / recent.digests.length;
  return {
    kind: 'stream-interruption',
    title: 'token streams end early or carry malformed events',
    confidence: Math.min(1, 0.5 + share / 2),
    ...range(interrupted, recent),
    evidence: [
      `${interrupted.length}/${recent.digests.length} responses (${pct(share)}) truncated or malformed`,
      ...ctx.gpuLines,
    ],
    figures: { interrupted: interrupted.length, responses: recent.digests.length, share },
    advice: [
      'check for connection resets between the client and the server (load balancer idle timeouts, proxy limits)',
    ],
  };
}
