import { expandTokenStats, type TokenStatsBatchSignal, type TokenStatsEntry } from '@fathom/contracts';
import { foldTokenStats, T0 } from './report-document.test-util';
import { buildRunSeries } from './run-series';
import { TokenStatsAccumulator } from './token-stats.accumulator';

const entry = (requestId: string, extra: Partial<TokenStatsEntry> = {}): TokenStatsEntry => ({
  requestId,
  outputTokens: 10,
  chunks: 10,
  gapCount: 9,
  gapMeanMs: 3,
  gapMaxMs: 8,
  tokenCountMismatch: 0,
  assessment: 'ok',
  latencySloMet: true,
  checks: { schema: true },
  ...extra,
});

const batch = (id: string, emittedAt: number, stats: TokenStatsEntry[]): TokenStatsBatchSignal => ({
  id,
  schemaVersion: 1,
  campaignId: 'c-1',
  runId: 'run-1',
  emittedAt,
  kind: 'token-stats-batch',
  stats,
});

/** All the bucket geometry reads of a window. */
const window = (second: number) => ({ windowStart: T0 + second * 1000, windowMs: 1000 }) as never;

describe(TokenStatsAccumulator.name, () => {
  const batches = [
    batch('b1', T0 + 1000, [
      entry('r1', { phase: { index: 0, segment: 'warmup' } }),
      entry('r2', { phase: { index: 1, segment: 'measured' }, gapMeanMs: null, gapCount: 0 }),
      entry('r3', {
        phase: { index: 1, segment: 'measured' },
        tokenCountMismatch: 2,
        checks: { schema: false },
      }),
    ]),
    batch('b2', T0 + 2000, [
      entry('r4', { assessment: 'error', tokenCountMismatch: null, gapMeanMs: 7.25, gapCount: 4 }),
      entry('r5', { phase: { index: 1, segment: 'cooldown' }, latencySloMet: false }),
    ]),
  ];

  it('folds a batch as it folds the batch expanded into one signal per record', () => {
    const sut = foldTokenStats(batches);

    expect(sut).toEqual(foldTokenStats(batches.flatMap(expandTokenStats)));
  });

  it('sums, counts and weights the gap mean by gap count, measured responses apart', () => {
    const sut = foldTokenStats(batches);

    expect(sut).toMatchObject({
      responses: 5,
      outputTokens: 50,
      chunks: 50,
      tokenCountMismatches: 1,
      serverCounted: 4,
      gapMeanMs: (3 * 9 + 3 * 9 + 7.25 * 4 + 3 * 9) / (9 + 9 + 4 + 9),
      // r2, r3 (steps) and r4 (no phase) are measured; r3 failed a check, r4 an error.
      measured: { judged: 3, good: 2, semanticallyGood: 1 },
    });
    expect([...sut.measuredByStep]).toEqual([[1, { judged: 2, good: 2, semanticallyGood: 1 }]]);
  });

  it('buckets a response by its digest end on the windows given, and none without a digest', () => {
    const windows = [0, 1, 2].map(window);
    const digest = (requestId: string, at: number) => ({ requestId, at }) as never;
    const sut = foldTokenStats(batches, {
      windows,
      digests: [
        digest('r1', T0 + 500),
        digest('r2', T0 + 1000),
        digest('r3', T0 + 1001),
        digest('r5', T0 + 2999),
      ],
    });

    expect(sut.series).toMatchObject({ start: T0, bucketMs: 1000 });
    expect([...sut.series.judgedByBucket]).toEqual([
      [0, { judged: 2, good: 2, semanticallyGood: 2 }],
      [1, { judged: 1, good: 1, semanticallyGood: 0 }],
      [2, { judged: 1, good: 0, semanticallyGood: 0 }],
    ]);
  });

  it('buckets a response by its own end before its digest end', () => {
    const sut = foldTokenStats([batch('b', T0 + 2500, [entry('r1', { endedAt: T0 + 1500 })])], {
      windows: [0, 1, 2].map(window),
      digests: [{ requestId: 'r1', at: T0 + 500 } as never],
    });

    expect([...sut.series.judgedByBucket.keys()]).toEqual([1]);
    expect(sut.placedByEmission).toBe(0);
  });

  it('past a full request-end index, buckets a response without its own end by its batch, counted', () => {
    const sut = foldTokenStats(
      [batch('b', T0 + 2500, [entry('indexed'), entry('own', { endedAt: T0 + 1500 }), entry('neither')])],
      {
        windows: [0, 1, 2].map(window),
        requestEnds: { ends: new Map([['indexed', T0 + 500]]), complete: false },
      },
    );

    expect([...sut.series.judgedByBucket].map(([bucket, n]) => [bucket, n.judged])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
    ]);
    expect(sut.placedByEmission).toBe(1);
  });

  it('keeps the token samples, most risk spans first, timed by their digest or else their batch', () => {
    const sample = (spans: number) => ({
      tokenSample: {
        rows: [],
        truncated: false,
        spans: Array.from({ length: spans }, () => ({ start: 0, end: 1 })),
      },
    });
    const sut = foldTokenStats(
      [
        batch('b', T0 + 5000, [
          entry('a', sample(0)),
          entry('b', sample(2)),
          entry('c'),
          entry('d', sample(0)),
        ]),
      ],
      { windows: [], digests: [{ requestId: 'd', at: T0 + 10 } as never] },
    );

    expect(sut.tokenSamples.map((s) => [s.requestId, s.at])).toEqual([
      ['b', T0 + 5000],
      ['d', T0 + 10],
      ['a', T0 + 5000],
    ]);
  });

  it('refuses a signal that is not token stats', () => {
    const sut = new TokenStatsAccumulator({ windows: [], digests: [] });

    expect(() => sut.add({ kind: 'detector' } as never)).toThrow(/not a token-stats signal: kind detector/);
  });

  it('is refused by the series when folded on other windows than the series is built on', () => {
    const folded = foldTokenStats(batches, { windows: [window(5)], digests: [] });

    expect(() =>
      buildRunSeries({ windows: [], digests: [], gpu: [], detectors: [], tokenStats: folded }),
    ).toThrow(/token stats were bucketed from .* the run's windows from 0 every 1000 ms/);
  });
});
