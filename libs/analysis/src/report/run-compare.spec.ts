import { compareRuns, formatComparison } from './run-compare';
import { fixtureReport } from './report-document.test-util';

/** Latency that wobbles +/- `noise` ms around `ms` from window to window. */
const wobble = (ms: number, noise: number) => (i: number) => ms + (i % 2 ? noise : -noise);

describe(compareRuns.name, () => {
  it('finds nothing between a run and itself', () => {
    const a = fixtureReport({ latencyMs: wobble(300, 20) });
    const sut = compareRuns(a, a);
    expect(sut.regressions).toEqual([]);
    expect(sut.rows.every((r) => r.verdict === 'same')).toBe(true);
  });

  it('flags an objective metric that got worse beyond the per-window spread', () => {
    const base = fixtureReport({ runId: 'a', latencyMs: wobble(300, 20) });
    const candidate = fixtureReport({ runId: 'b', latencyMs: wobble(450, 20) });
    const sut = compareRuns(base, candidate);
    const p99 = sut.rows.find((r) => r.metric === 'e2e.p99')!;
    expect(p99).toMatchObject({ objective: true, beyondNoise: true, verdict: 'worse', regressed: true });
    expect(sut.regressions[0]).toMatch(
      /^e2e\.p99 3\d\d ms -> 5\d\d ms \(\+\d+\.\d %\), beyond noise \(\+\/- \d+\.\d+\)$/,
    );
    expect(formatComparison(sut)).toMatch(/e2e\.p99 \*.*REGRESSED/);
  });

  it('holds a change inside the noise of two wobbly runs as no change', () => {
    const base = fixtureReport({ runId: 'a', latencyMs: wobble(300, 150) });
    const candidate = fixtureReport({ runId: 'b', latencyMs: wobble(330, 150) });
    const sut = compareRuns(base, candidate);
    expect(sut.rows.find((r) => r.metric === 'e2e.p99')).toMatchObject({
      beyondNoise: false,
      regressed: false,
    });
    expect(sut.regressions).toEqual([]);
  });

  it('counts an objective that held and is now missed as a regression', () => {
    const base = fixtureReport({ runId: 'a', latencyMs: () => 300, slo: { p99Ms: 400 } });
    const candidate = fixtureReport({ runId: 'b', latencyMs: () => 500, slo: { p99Ms: 400 } });
    const sut = compareRuns(base, candidate);
    expect(sut.objectives).toContainEqual(
      expect.objectContaining({ objective: 'slo p99Ms', base: true, candidate: false }),
    );
    expect(sut.regressions.some((r) => r.startsWith('slo p99Ms now missed'))).toBe(true);
  });

  it('flags an error rate that rose from zero, and not one failed request in ten thousand', () => {
    const base = fixtureReport({ runId: 'a', latencyMs: () => 300 });
    const failing = fixtureReport({ runId: 'b', latencyMs: () => 300, errorsPerWindow: 1 });
    expect(compareRuns(base, failing).rows.find((r) => r.metric === 'errorRate')).toMatchObject({
      regressed: true,
    });
    expect(formatComparison(compareRuns(base, failing))).toMatch(/errorRate \*\s+0\.00 %\s+5\.00 %/);
    const rare = fixtureReport({
      runId: 'c',
      latencyMs: () => 300,
      errorsPerWindow: 1,
      requestsPerWindow: 2000,
    });
    expect(compareRuns(base, rare).rows.find((r) => r.metric === 'errorRate')).toMatchObject({
      beyondNoise: false,
      regressed: false,
    });
  });

  it('calls a faster candidate better, not a regression', () => {
    const sut = compareRuns(
      fixtureReport({ runId: 'a', latencyMs: wobble(450, 20) }),
      fixtureReport({ runId: 'b', latencyMs: wobble(300, 20) }),
    );
    expect(sut.rows.find((r) => r.metric === 'e2e.p99')).toMatchObject({
      verdict: 'better',
      regressed: false,
    });
    expect(sut.regressions).toEqual([]);
  });
});
