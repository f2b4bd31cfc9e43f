import type { RunLifecycle, TokenStatsSignal } from '@fathom/contracts';
import { buildRunSummary, type RunEvidence } from './run-summary.builder';

const envelope = { schemaVersion: 1 as const, campaignId: 'c', runId: 'r' };

function lifecycle(phase: RunLifecycle['phase'], at: number): RunLifecycle {
  return {
    ...envelope,
    id: `${phase}-${at}`,
    emittedAt: at,
    phase,
    shard: { index: 0, count: 1 },
    generatorId: 'g',
    counts: { sent: 0, completed: 0, errors: 0, dropped: 0, recordsPublished: 0, windowsPublished: 0 },
  };
}

function stats(id: string, extra: Partial<TokenStatsSignal>): TokenStatsSignal {
  return {
    ...envelope,
    id,
    emittedAt: 0,
    kind: 'token-stats',
    requestId: id,
    outputTokens: 4,
    chunks: 4,
    gapCount: 3,
    gapMeanMs: 10,
    gapMaxMs: 12,
    tokenCountMismatch: 0,
    ...extra,
  };
}

const evidence = (tokenStats: TokenStatsSignal[]): RunEvidence => ({
  spec: null,
  lifecycle: [lifecycle('shard-started', 0), lifecycle('shard-finished', 10_000)],
  windows: [],
  tokenStats,
  detectorSignals: 0,
  gpu: [],
  tierChanges: [],
  aborted: false,
});

describe(buildRunSummary.name, () => {
  it('puts semantic goodput beside goodput: failed or slow requests are not good, failed checks not semantically good', () => {
    const sut = buildRunSummary(
      evidence([
        stats('ok', { assessment: 'ok', latencySloMet: true, checks: { 'hallucination-risk': true } }),
        stats('no-slo', { assessment: 'ok', latencySloMet: null, checks: {} }),
        stats('hallucinated', {
          assessment: 'ok',
          latencySloMet: true,
          checks: { 'hallucination-risk': false },
        }),
        stats('slow', { assessment: 'ok', latencySloMet: false, checks: { 'hallucination-risk': true } }),
        stats('failed', { assessment: 'error', latencySloMet: false, checks: {} }),
      ]),
    );
    expect(sut.semantic.goodput).toMatchObject({ judged: 5, good: 3, semanticallyGood: 2 });
  });

  it('scales goodput to the run request rate', () => {
    const sut = buildRunSummary(
      evidence([stats('a', { assessment: 'ok', latencySloMet: true, checks: {} })]),
    );
    // No windows: no requests counted, so no rate to scale.
    expect(sut.semantic.goodput?.goodputPerSec).toBe(0);
  });
});
