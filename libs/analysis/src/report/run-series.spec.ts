import { envelope, type DetectorSignal, type TelemetryWindow } from '@fathom/contracts';
import { mergeWindows } from '@fathom/load';
import { RUN_SERIES_LIMITS, buildRunSeries, requestRatesPerBucket, seriesBuckets } from './run-series';
import { T0, fixtureReport } from './report-document.test-util';

let seq = 0;
/** A window of `requests` requests from `startMs` after T0, `windowMs` long, as a generator sends it. */
function win(
  startMs: number,
  windowMs: number,
  requests: number,
  generatorId = 'g0',
  phase?: 'warmup',
): TelemetryWindow {
  return {
    ...envelope('c-1', 'run-1', T0 + startMs + windowMs),
    ...mergeWindows([]),
    generatorId,
    shard: 0,
    windowStart: T0 + startMs,
    windowMs,
    seq: seq++,
    requests,
    outputTokens: requests * 2,
    ...(phase ? { phase: { step: 0, segment: phase, kind: 'run' } } : {}),
  } as TelemetryWindow;
}

const series = (windows: TelemetryWindow[]) =>
  buildRunSeries({ windows, digests: [], gpu: [], detectors: [], tokenStats: null });

describe(buildRunSeries.name, () => {
  it('merges the generators of each second into one window with exact quantiles', () => {
    const sut = fixtureReport({ latencyMs: (i) => 100 + 10 * i, generators: 2 }).series!;
    expect(sut.bucketMs).toBe(1000);
    expect(sut.windows).toHaveLength(10);
    expect(sut.windows[0]).toMatchObject({
      at: T0 + 1000,
      requests: 40,
      requestsPerSec: 40,
      outputTokens: 640,
    });
    // 130 ms to 143 ms spread evenly over the window's requests (the fixture's +10 %).
    expect(sut.windows[3].latencyMs.e2e.p50).toBeGreaterThan(135);
    expect(sut.windows[3].latencyMs.e2e.p50).toBeLessThan(138);
  });

  it('gives goodput and semantic goodput per window from the judged responses of that window', () => {
    const w = fixtureReport({ latencyMs: () => 100 }).series!.windows[0];
    // Two judged responses, both good, one with a failed semantic check: half the rate.
    expect(w).toMatchObject({
      judged: 2,
      good: 2,
      semanticallyGood: 1,
      goodputPerSec: 20,
      semanticGoodputPerSec: 10,
    });
  });

  it('counts every value once in the distributions and keeps the token samples, risky first', () => {
    const sut = fixtureReport({ latencyMs: (i) => 50 * (i + 1) }).series!;
    const total = sut.distributions.e2e.counts.reduce((a, b) => a + b, 0);
    expect(total).toBe(sut.distributions.e2e.total);
    expect(total).toBe(200);
    expect(sut.distributions.outputTokens.total).toBe(20);
    expect(sut.tokenSamples.map((s) => s.spans.length)).toEqual([1, 0]);
    expect(sut.records).toHaveLength(20);
    expect(sut.semanticFindings.map((f) => f.detector)).toEqual(['prompt-explosion']);
  });

  it("sums a long run's detector signals per detector, with its worst and latest as examples", () => {
    // An hour at the default record budget against a target whose every answer is flagged: one
    // signal per record. Grouped by copying each group anew, these took minutes (13.7 s for 60,000).
    const signals: DetectorSignal[] = Array.from({ length: 360_000 }, (_, i) => ({
      ...envelope('c-1', 'run-1', T0 + i * 10),
      kind: 'detector',
      detector: i % 3 === 0 ? 'semantic-anomaly' : 'hallucination',
      requestId: `r-${i}`,
      severity: i === 7 ? 'critical' : 'warning',
      message: `signal ${i}`,
      figures: {},
    }));
    const sut = buildRunSeries({
      windows: [win(0, 1000, 1)],
      digests: [],
      gpu: [],
      detectors: signals,
      tokenStats: null,
    });
    expect(sut.semanticFindings.map((f) => [f.detector, f.count, f.firstAt, f.lastAt])).toEqual([
      ['hallucination', 240_000, T0 + 10, T0 + 3_599_990],
      ['semantic-anomaly', 120_000, T0, T0 + 3_599_970],
    ]);
    const hallucination = sut.semanticFindings[0];
    expect(hallucination.bySeverity).toEqual({ critical: 1, warning: 239_999 });
    expect(hallucination.examples.map((e) => e.message)).toEqual([
      'signal 7',
      ...[359_999, 359_998, 359_996, 359_995]
        .slice(0, RUN_SERIES_LIMITS.examplesPerDetector - 1)
        .map((i) => `signal ${i}`),
    ]);
  });

  it('keeps at most maxBuckets windows however long the run', () => {
    const sut = fixtureReport({ latencyMs: () => 10, windows: 2000, requestsPerWindow: 1 }).series!;
    expect(sut.windows.length).toBeLessThanOrEqual(RUN_SERIES_LIMITS.maxBuckets);
    expect(sut.bucketMs).toBe(3000);
    expect(sut.windows.reduce((n, w) => n + w.requests, 0)).toBe(2000);
    expect(sut.records).toHaveLength(RUN_SERIES_LIMITS.maxRecords);
  });

  it('puts each window in the second that holds its middle: a tick a moment late leaves no empty second', () => {
    // Windows as the engine ticks them: each ends where the next starts, at times a little off the
    // grid. By their ends, every window after the first late tick fell one second on.
    // Ticks at 1000.6, 2000.3 and 3001.2 ms; the run ended at 3400 ms.
    const sut = series([
      win(0, 1001, 100),
      win(1000.6, 1000, 100),
      win(2000.3, 1001, 100),
      win(3001.2, 399, 40),
    ]);
    expect(sut.bucketMs).toBe(1000);
    expect(sut.windows.map((w) => w.at - T0)).toEqual([1000, 2000, 3000, 4000]);
    expect(sut.windows[3]).toMatchObject({ requests: 40, seconds: 0.399 });
    expect(sut.windows[3].requestsPerSec).toBeCloseTo(100.25, 2);
  });

  it("spaces its buckets by the generators' grid, not by the measured lengths' median", () => {
    // Ticks a millisecond late, as CI saw: the measured lengths' median was 1001 ms, and buckets
    // 1001 ms apart each held a window that measured 1000 ms.
    const grid = (w: TelemetryWindow) => ({ ...w, gridMs: 1000 });
    const sut = series([
      grid(win(0, 1001, 100)),
      grid(win(1001, 1001, 100)),
      grid(win(2002, 1000, 100)),
      grid(win(3002, 1001, 100)),
      grid(win(4003, 300, 30)),
    ]);
    expect(sut.bucketMs).toBe(1000);
    expect(sut.windows.map((w) => w.at - T0)).toEqual([1000, 2000, 3000, 4000, 5000]);
    // Without a grid (windows stored before they carried one) the median is all there is.
    expect(series([win(0, 1001, 1), win(1001, 1001, 1), win(2002, 1000, 1)]).bucketMs).toBe(1001);
  });

  it("buckets a day of two shards' windows, more than a spread of arguments can take", () => {
    // 172,800 windows: Math.min(...starts) threw RangeError (Maximum call stack size exceeded).
    const base = { ...win(0, 1000, 10), gridMs: 1000 };
    const day = [0, 1].flatMap((shard) =>
      Array.from({ length: 86_400 }, (_, i) => ({
        ...base,
        shard,
        windowStart: T0 + i * 1000 + shard * 137,
      })),
    );
    // 86,400.137 s in at most 720 buckets: 121 s each, 715 of them.
    expect(seriesBuckets(day)).toEqual({ start: T0, bucketMs: 121_000 });
    const rates = requestRatesPerBucket(day);
    expect(rates).toHaveLength(715);
    expect(rates[1]).toBeCloseTo(20, 9);
  });

  it("takes a stalled tick's long window for the time it covered, not for one second", () => {
    const sut = series([win(0, 1000, 50), win(1000, 2400, 240), win(3400, 1000, 100)]);
    expect(sut.windows.map((w) => [w.at - T0, w.seconds, w.requestsPerSec])).toEqual([
      [1000, 1, 50],
      [3000, 2.4, 100],
      [4000, 1, 100],
    ]);
    expect(sut.windows[1].outputTokensPerSec).toBe(200);
  });

  it('counts a span once when a tick closed a window per phase, and adds generators up', () => {
    const sut = series([win(0, 500, 10, 'g0', 'warmup'), win(0, 500, 40, 'g0'), win(30, 500, 25, 'g1')]);
    expect(sut.windows).toHaveLength(1);
    expect(sut.windows[0]).toMatchObject({ requests: 75, seconds: 0.5, requestsPerSec: 150 });
  });
});
