import {
  CampaignSpecSchema,
  type LoadPhase,
  type RunLifecycle,
  type TelemetryWindow,
  type TokenStatsSignal,
} from '@fathom/contracts';
import { decodeHistogram, encodeHistogram, mergeWindows } from '@fathom/load';
import { foldTokenStats } from './report-document.test-util';
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
  tokenStats: foldTokenStats(tokenStats),
  detectorSignals: 0,
  gpu: [],
  tierChanges: [],
  aborted: false,
});

describe(buildRunSummary.name, () => {
  it("rates requests over the load's extent, not over the generators' telemetry drain after it", () => {
    // 10 windows of 100 requests from t = 0 to 10 s; the shard said it finished at 17 s, once its
    // records had gone out.
    const windows = Array.from({ length: 10 }, (_, seq) => window(seq, 5, 100));
    const sut = buildRunSummary({
      ...evidence([]),
      lifecycle: [lifecycle('shard-started', -200), lifecycle('shard-finished', 17_000)],
      windows,
    });
    expect(sut.requests).toBe(1000);
    expect([sut.startedAt, sut.endedAt]).toEqual([0, 10_000]);
    expect(sut.throughput.requestsPerSec).toBe(100);
  });

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

const histogramOf = (ms: number, count: number) => {
  const h = decodeHistogram(mergeWindows([]).histogramsUs.e2e);
  h.recordValueWithCount(Math.round(ms * 1000), count);
  return encodeHistogram(h);
};

/** A window of `requests` requests taking `ms` each (TPOT `ms / 20`), in `phase`. */
function window(seq: number, ms: number, requests: number, phase?: LoadPhase): TelemetryWindow {
  const latency = histogramOf(ms, requests);
  return {
    ...envelope,
    id: `w${seq}`,
    emittedAt: seq * 1000,
    generatorId: 'g',
    shard: 0,
    windowStart: seq * 1000,
    windowMs: 1000,
    seq,
    requests,
    errors: 0,
    errorClasses: {},
    dropped: 0,
    late: 0,
    inputTokens: 0,
    outputTokens: 0,
    ...(phase ? { phase } : {}),
    histogramsUs: {
      e2e: latency,
      correctedE2e: latency,
      ttft: latency,
      itl: latency,
      tpot: histogramOf(ms / 20, requests),
    },
  };
}

const spec = (slo: object) =>
  CampaignSpecSchema.parse({
    name: 's',
    target: { baseUrl: 'http://127.0.0.1:1/v1' },
    scenario: { type: 'chat', prompts: ['hi'] },
    load: { concurrency: 1, durationMs: 3000, warmupMs: 500 },
    slo,
    report: { percentiles: [90, 99.9] },
  });

describe('buildRunSummary: warm-up, cool-down and TPOT', () => {
  const phase = (segment: LoadPhase['segment']): LoadPhase => ({
    index: 0,
    kind: 'run',
    segment,
    elapsedMs: 1000,
  });

  it('judges only the measured requests; warm-up and cool-down are counted and shown apart', () => {
    const sut = buildRunSummary({
      ...evidence([]),
      spec: spec({ p99Ms: 500 }),
      windows: [
        window(0, 2000, 10, phase('warmup')),
        window(1, 100, 50, phase('measured')),
        window(2, 900, 5, phase('cooldown')),
      ],
    });
    expect(sut.requests).toBe(65);
    expect(sut.latencyMs.e2e.count).toBe(50);
    expect(sut.latencyMs.e2e.p99).toBeCloseTo(100, 0);
    expect(sut.slo.passed).toBe(true);
    expect(sut.warmup).toMatchObject({ requests: 10, latencyMs: { e2e: { count: 10 } } });
    expect(sut.warmup!.latencyMs.e2e.p99).toBeCloseTo(2000, -1);
    expect(sut.cooldown!.requests).toBe(5);
    expect(sut.latencyMs.e2e.percentiles).toEqual({ p90: expect.any(Number), 'p99.9': expect.any(Number) });
    expect(sut.sweep).toBeUndefined();
  });

  it('fails tpotP99Ms on the TPOT histogram', () => {
    const windows = [window(0, 400, 50)];
    expect(buildRunSummary({ ...evidence([]), spec: spec({ tpotP99Ms: 25 }), windows }).slo.passed).toBe(
      true,
    );
    const failed = buildRunSummary({ ...evidence([]), spec: spec({ tpotP99Ms: 15 }), windows }).slo;
    expect(failed.failures).toEqual([expect.stringMatching(/^TPOT P99 20\.0 ms > 15 ms$/)]);
  });

  it('says the run ended on its SLO when a shard stopped under abortOnFail', () => {
    const finished = {
      ...lifecycle('shard-finished', 10_000),
      endReason: 'slo-failed' as const,
      reason: 'P99 900.0 ms > 500 ms',
    };
    const sut = buildRunSummary({ ...evidence([]), lifecycle: [lifecycle('shard-started', 0), finished] });
    expect(sut.endReason).toBe('slo-failed');
    expect(sut.reason).toBe('stopped: SLO failed (P99 900.0 ms > 500 ms)');
  });

  it("lists every finished shard's adversarial-entropy probes, by shard and prompt", () => {
    const probe = (shard: number, promptIndex: number) => ({
      shard,
      promptIndex,
      prompt: 'p',
      status: 'skipped' as const,
      reason: 'fewer than 3 words with a known synonym in the prompt',
      peak: null,
      anchorWord: null,
      before: null,
      variants: [],
    });
    const finished = (shard: number, probes: ReturnType<typeof probe>[]) => ({
      ...lifecycle('shard-finished', 10_000),
      shard: { index: shard, count: 2 },
      adversarial: probes,
    });
    const sut = buildRunSummary({
      ...evidence([]),
      lifecycle: [
        lifecycle('shard-started', 0),
        finished(1, [probe(1, 0)]),
        finished(0, [probe(0, 1), probe(0, 0)]),
      ],
    });
    expect(sut.adversarial?.map((p) => [p.shard, p.promptIndex])).toEqual([
      [0, 0],
      [0, 1],
      [1, 0],
    ]);
    expect(buildRunSummary(evidence([])).adversarial).toBeUndefined();
  });
});
