import { sloVerdict } from './slo-verdict';

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
