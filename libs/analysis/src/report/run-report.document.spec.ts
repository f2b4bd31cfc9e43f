import { compareRuns, type RunReportDocument } from './run-report.document';

const q = (p50: number, p99: number) => ({ count: 10, mean: p50, p50, p95: p99, p99, max: p99 });
const doc = (
  runId: string,
  e2eP99: number,
  errorRate: number,
  tier: string,
  causes: string[],
): RunReportDocument =>
  ({
    schemaVersion: 2,
    runId,
    summary: {
      latencyMs: { e2e: q(100, e2eP99), correctedE2e: q(100, e2eP99), ttft: q(20, 40), itl: q(5, 9) },
      errorRate,
      throughput: { requestsPerSec: 10, outputTokensPerSec: 300 },
    },
    tiers: { final: tier, changes: [] },
    rootCauses: causes.map((kind) => ({ kind })),
    validity: { valid: true, reasons: [] },
  }) as unknown as RunReportDocument;

describe(compareRuns.name, () => {
  it('reports the latency, error-rate, tier and root-cause differences of the candidate', () => {
    const sut = compareRuns(doc('a', 300, 0, 'SLO-0', []), doc('b', 900, 0.02, 'SLO-1', ['stream-stall']));
    expect(sut.latency['e2e.p99']).toEqual({ baseline: 300, candidate: 900, deltaMs: 600, ratio: 3 });
    expect(sut.rootCauses).toEqual({ added: ['stream-stall'], removed: [] });
    expect(sut.findings).toEqual([
      'e2e p95 300.0 -> 900.0 ms (x3.00)',
      'e2e p99 300.0 -> 900.0 ms (x3.00)',
      'error rate 0.00 % -> 2.00 %',
      'tier SLO-0 -> SLO-1',
      'new root cause: stream-stall',
    ]);
  });

  it('finds nothing between a run and itself', () => {
    const a = doc('a', 300, 0, 'SLO-0', ['kv-cache-pressure']);
    expect(compareRuns(a, a).findings).toEqual([]);
  });
});
