import { junitXml, recordsCsv, windowsCsv } from './report-exports';
import { fixtureReport } from './report-document.test-util';

describe(windowsCsv.name, () => {
  it('writes one row per window with every figure, the tier and the open breakers', () => {
    const lines = windowsCsv(fixtureReport({ latencyMs: () => 100, errorsPerWindow: 2 }))
      .trimEnd()
      .split('\r\n');
    expect(lines).toHaveLength(11);
    const header = lines[0].split(',');
    expect(header).toEqual(
      expect.arrayContaining([
        'requests',
        'e2e_p99_ms',
        'itl_p50_ms',
        'goodput_per_s',
        'tier',
        'open_breakers',
        'errors_http-5xx',
      ]),
    );
    const row = (i: number) => Object.fromEntries(lines[i + 1].split(',').map((v, k) => [header[k], v]));
    expect(row(0)).toMatchObject({
      requests: '20',
      errors: '2',
      error_rate: '0.1',
      tier: 'SLO-0',
      open_breakers: '0',
      'errors_http-5xx': '2',
    });
    expect(row(5)).toMatchObject({ open_breakers: '1' });
  });
});

describe(recordsCsv.name, () => {
  it('writes the sampled records, quoting what needs it', () => {
    const text = recordsCsv(fixtureReport({ latencyMs: () => 100 }));
    const lines = text.trimEnd().split('\r\n');
    expect(lines).toHaveLength(21);
    expect(lines[1]).toMatch(/^r-0-0,\d+,\d+,0,200,true,,100,100,20,5,2,10,16,0,1$/);
  });
});

describe(junitXml.name, () => {
  it('has a test case per campaign and tier objective, failures with the measured value', () => {
    const sut = junitXml(fixtureReport({ latencyMs: () => 900, slo: { p99Ms: 500, maxErrorRate: 0.05 } }));
    expect(sut).toMatch(/<testsuite name="campaign SLO" tests="3" failures="1"/);
    expect(sut).toMatch(
      /<testcase name="p99Ms" classname="fathom.slo" time="0">\s*<failure message="measured 98\d\.\d+, threshold 500"/,
    );
    expect(sut).toMatch(/<testcase name="maxErrorRate" classname="fathom.slo" time="0"\/>/);
    expect(sut).toMatch(/<testsuite name="tier SLO-0" tests="\d+" failures="[1-9]/);
    expect(sut).toMatch(
      /<testcase name="correctedE2e p99" classname="fathom.tier.SLO-0" time="0">\s*<failure message="measured 9\d\d/,
    );
  });
});
