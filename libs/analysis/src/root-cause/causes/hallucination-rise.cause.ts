import type { RootCauseCause } from '@fathom/contracts';
import { TOKEN_RISK_BOUNDARY_BITS } from '@fathom/semantic';
import { CauseThresholds } from '../cause-thresholds.constant';
import { pct, range, type DiagnosisContext } from '../diagnosis.context';

/**
 * The share of responses with a hallucination-risk segment (spec: sliding-window mean entropy,
 * facts ~2.1 bits, hallucinated ~4.8 bits) rose over the baseline's, or is high without one.
 */
export function hallucinationRiseCause(ctx: DiagnosisContext): RootCauseCause | null {
  const { base } = ctx;
  let recent = ctx.recent;
  let judged = recent.digests.filter((d) => d.riskSegments !== null);
  if (judged.length < CauseThresholds.hallucinationMinJudged) {
    // Records stop while a breaker holds the traffic back (semantic-failure-rate opens the LLM
    // breaker on the same answers): judge the last error span after the baseline instead.
    const from = Math.max(ctx.startMs, ctx.nowMs - CauseThresholds.errorWindowMs, base?.toMs ?? -Infinity);
    recent = ctx.timeline.span(from, ctx.nowMs);
    judged = recent.digests.filter((d) => d.riskSegments !== null);
  }
  const baseJudged = base ? base.digests.filter((d) => d.riskSegments !== null) : [];
  if (judged.length < CauseThresholds.hallucinationMinJudged) return null;
  const risky = judged.filter((d) => (d.riskSegments ?? 0) > 0);
  const share = risky.length / judged.length;
  const baseShare =
    baseJudged.length >= CauseThresholds.hallucinationMinJudged
      ? baseJudged.filter((d) => (d.riskSegments ?? 0) > 0).length / baseJudged.length
      : null;
  const rise = baseShare === null ? null : share - baseShare;
  const z =
    baseShare === null
      ? null
      : twoProportionZ(risky.length, judged.length, baseShare * baseJudged.length, baseJudged.length);
  if (!(
    (rise !== null &&
      z !== null &&
      rise >= CauseThresholds.hallucinationRise &&
      z >= CauseThresholds.hallucinationRiseZ) ||
    (baseShare === null && share >= CauseThresholds.hallucinationShareNoBaseline)
  ))
    return null;
  return {
    kind: 'hallucination-rise',
    title: 'the share of responses with high-entropy (hallucination-risk) segments rose',
    confidence: Math.min(1, 0.5 + (rise ?? share - 0.2)),
    ...range(risky, recent),
    evidence: [
      `${risky.length}/${judged.length} responses (${pct(share)}) carry a risk segment (window mean entropy above ~2.9 bits), baseline ${baseShare === null ? 'n/a' : pct(baseShare)}`,
      `peak window mean entropy ${Math.max(...risky.map((d) => d.maxWindowEntropyBits ?? 0)).toFixed(2)} bits (spec: facts ~2.1, hallucinated ~4.8 bits)`,
    ],
    figures: {
      riskyShare: share,
      ...(baseShare !== null ? { baselineShare: baseShare, baselineJudged: baseJudged.length } : {}),
      ...(z !== null ? { z } : {}),
      judged: judged.length,
    },
    thresholds: [
      {
        name: 'risk segment: window mean entropy (bits)',
        value: TOKEN_RISK_BOUNDARY_BITS,
        source: 'simulator',
        note: "equal-likelihood boundary of the spec's bands (facts 2.1 +/- 0.3, hallucinated 4.8 +/- 0.9 bits); checked on the simulator's logprobs only",
      },
      baseShare === null
        ? {
            name: 'risky share without a baseline',
            value: CauseThresholds.hallucinationShareNoBaseline,
            source: 'simulator',
            note: "set on the simulator's planted hallucination rate",
          }
        : {
            name: 'rise of the risky share over the baseline',
            value: CauseThresholds.hallucinationRise,
            source: 'statistics',
            note: `and significant: one-sided two-proportion z >= ${CauseThresholds.hallucinationRiseZ} (p ~ 0.0013)`,
          },
    ],
    advice: [
      'lower the sampling temperature and ground answers in retrieved context',
      'gate answers on the sliding-window entropy: regenerate or abstain on a risk segment',
    ],
  };
}

/**
 * One-sided two-proportion z statistic of k1/n1 over k0/n0 (pooled variance). With no spread in
 * the pool (all or none risky in both) it is 0, never a division by zero.
 */
export function twoProportionZ(k1: number, n1: number, k0: number, n0: number): number {
  if (n1 <= 0 || n0 <= 0) return 0;
  const pooled = (k1 + k0) / (n1 + n0);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n0));
  return se === 0 ? 0 : (k1 / n1 - k0 / n0) / se;
}
