import { Detectors, type RootCauseCause, minOf } from '@fathom/contracts';
import { pct, type DiagnosisContext } from '../diagnosis.context';

/**
 * RAG recall avalanche (spec, anomaly class 2) from the semantic-monitor's `rag-mismatch`
 * signals: named while the latest one up to `nowMs` says most query/document pairs of the run are
 * over the KL threshold (`mismatched`). Its tally is run-wide, so the cause spans from the first
 * mismatched signal to the latest; the further the over-threshold share is past the alarm share,
 * the higher the confidence.
 */
export function retrievalMismatchCause(ctx: DiagnosisContext): RootCauseCause | null {
  const { timeline, nowMs } = ctx;
  const signals = timeline.detectorsOf(Detectors.ragMismatch).filter((s) => s.emittedAt <= nowMs);
  if (signals.length === 0) return null;
  const latest = signals.reduce((a, b) => (b.emittedAt >= a.emittedAt ? b : a));
  const f = latest.figures;
  if (f.mismatched !== 1) return null;
  const share = f.overThresholdShare ?? 0;
  const alarm = f.alarmShare ?? 0.5;
  const first = minOf(signals.filter((s) => s.figures.mismatched === 1).map((s) => s.emittedAt));
  const kl = (v: number | undefined) => (v === undefined ? 'n/a' : v.toExponential(2));
  return {
    kind: 'retrieval-mismatch',
    title: 'retrieved documents do not match their queries (RAG recall avalanche)',
    confidence: Math.min(1, 0.6 + (share - alarm)),
    since: first,
    until: latest.emittedAt,
    evidence: [
      `${f.overThreshold ?? 0}/${f.pairs ?? 0} query/document pairs (${pct(share)}) over KL ${kl(f.thresholdKl)} nats (softmaxed embeddings), alarm above ${pct(alarm)}`,
      `mean KL ${kl(f.meanKl)}, P95 ${kl(f.p95Kl)} nats`,
    ],
    figures: Object.fromEntries(
      ['pairs', 'overThreshold', 'overThresholdShare', 'thresholdKl', 'meanKl', 'p95Kl'].flatMap((k) =>
        f[k] === undefined ? [] : [[k, f[k]]],
      ),
    ),
    thresholds: [
      {
        name: 'KL threshold (nats)',
        value: f.thresholdKl ?? 0,
        source: 'simulator',
        note: "derived on the simulated target's retrieve layer with USE-lite embeddings (the spec names the measure, not a threshold); not yet checked on a real index",
      },
      {
        name: 'alarm share of pairs over it',
        value: alarm,
        source: 'simulator',
        note: 'our choice (the median retrieved document is off), checked on the simulator only',
      },
    ],
    advice: [
      'check that queries and documents are embedded by the same model version (a re-embedded corpus or a new query encoder drifts them apart)',
      'rebuild or refresh the index, and test the retrieve layer alone at paragraph granularity to see where recall falls',
    ],
  };
}
