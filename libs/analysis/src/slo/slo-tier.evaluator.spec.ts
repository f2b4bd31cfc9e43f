import { BREACH_TIER, evaluateTier, TierTracker } from './slo-tier.evaluator';
import { sloVerdict } from './slo-verdict';

describe(evaluateTier.name, () => {
  const healthy = { requests: 1000, availability: 1, p99Ms: 300, breakerTripsPerMinute: 0 };

  it('puts a healthy run in SLO-0', () => {
    expect(evaluateTier(healthy).tier).toBe('SLO-0');
  });

  it('drops to SLO-1 when P99 passes 800 ms but stays within 1.2 s', () => {
    const sut = evaluateTier({ ...healthy, p99Ms: 950 });
    expect(sut.tier).toBe('SLO-1');
    expect(sut.reason).toContain('P99 950.0 ms > 800 ms');
  });

  it('drops to SLO-1 at one breaker trip a minute', () => {
    expect(evaluateTier({ ...healthy, breakerTripsPerMinute: 1 }).tier).toBe('SLO-1');
  });

  it('reports a breach when no tier holds', () => {
    const sut = evaluateTier({ ...healthy, availability: 0.9 });
    expect(sut.tier).toBe(BREACH_TIER);
    expect(sut.reason).toContain('SLO-1 missed: availability 90.00 %');
  });
});

describe(TierTracker.name, () => {
  it('reports the first tier and then only changes', () => {
    const sut = new TierTracker();
    expect(sut.observe('r1', { tier: 'SLO-0', reason: '' })).toEqual({ from: null, to: 'SLO-0', reason: '' });
    expect(sut.observe('r1', { tier: 'SLO-0', reason: '' })).toBeNull();
    expect(sut.observe('r1', { tier: 'SLO-1', reason: 'x' })).toEqual({
      from: 'SLO-0',
      to: 'SLO-1',
      reason: 'x',
    });
  });
});

describe(sloVerdict.name, () => {
  it('names each failed objective with figure and threshold', () => {
    const sut = sloVerdict(
      { requests: 10, errorRate: 0.1, p95Ms: 100, p99Ms: 900, ttftP99Ms: 50 },
      { p99Ms: 800, maxErrorRate: 0.01 },
    );
    expect(sut.passed).toBe(false);
    expect(sut.failures).toEqual(['error rate 10.00 % > 1.00 %', 'P99 900.0 ms > 800 ms']);
  });

  it('fails a run that completed nothing', () => {
    expect(
      sloVerdict({ requests: 0, errorRate: 0, p95Ms: null, p99Ms: null, ttftP99Ms: null }, {}).passed,
    ).toBe(false);
  });

  it('fails a run where every request failed, even with no threshold set', () => {
    const sut = sloVerdict({ requests: 720, errorRate: 1, p95Ms: 3, p99Ms: 4, ttftP99Ms: null }, {});
    expect(sut).toEqual({ passed: false, failures: ['no request succeeded: all 720 failed'] });
  });
});
