import { RUN_SERIES_LIMITS, buildRunSeries } from './run-series';
import { T0, fixtureReport } from './report-document.test-util';

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

  it('keeps at most maxBuckets windows however long the run', () => {
    const sut = fixtureReport({ latencyMs: () => 10, windows: 2000, requestsPerWindow: 1 }).series!;
    expect(sut.windows.length).toBeLessThanOrEqual(RUN_SERIES_LIMITS.maxBuckets);
    expect(sut.bucketMs).toBe(3000);
    expect(sut.windows.reduce((n, w) => n + w.requests, 0)).toBe(2000);
    expect(sut.records).toHaveLength(RUN_SERIES_LIMITS.maxRecords);
  });
});
