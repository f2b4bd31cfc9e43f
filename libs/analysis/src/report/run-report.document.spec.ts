import type { DetectorSignal, MeasurementValidity, RunSummary } from '@fathom/contracts';
import type { RecordDigest } from '../evidence/record-digest';
import { RunTimeline } from '../evidence/run-timeline';
import { buildRunReportDocument, compareRuns, type RunReportDocument } from './run-report.document';

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

describe(buildRunReportDocument.name, () => {
  const T0 = 1_700_000_000_000;
  const signal = (extra: Partial<DetectorSignal>): DetectorSignal =>
    ({
      id: 's',
      campaignId: 'c-1',
      runId: 'run-1',
      schemaVersion: 1,
      emittedAt: T0 + 500,
      kind: 'detector',
      requestId: null,
      severity: 'info',
      message: '',
      figures: {},
      ...extra,
    }) as DetectorSignal;
  const drift = signal({
    detector: 'schema-drift',
    severity: 'critical',
    message: 'tool weather v1.9: type-changed at $.temp_c (declared "number", observed string)',
    figures: { breaking: 1, judgedCalls: 1, status: 200 },
    labels: { tool: 'weather', version: 'v1.9', path: '$.temp_c', change: 'type-changed' },
  });
  const timelineWith = (signals: DetectorSignal[]) => {
    const timeline = new RunTimeline();
    timeline.addDigests(
      [true, false, false, null].map(
        (contractPassed, i) =>
          ({
            at: T0 + 100 * (i + 1),
            startedAt: T0,
            calls: [],
            toolCalls: [
              {
                tool: 'weather',
                version: 'v1.9',
                contractPassed,
                fallback: false,
                fallbackTriggered: i === 3,
              },
            ],
          }) as unknown as RecordDigest,
      ),
    );
    for (const s of signals) timeline.addDetector(s);
    return timeline;
  };
  const build = (timeline: RunTimeline) =>
    buildRunReportDocument({
      runId: 'run-1',
      campaignId: 'c-1',
      summary: {} as RunSummary,
      timeline,
      tiers: [],
      tierChanges: [],
      breakerChanges: [],
      rootCauses: [],
      validity: { valid: true, reasons: [] } as MeasurementValidity,
      stallMs: 500,
    });

  it('lists each drifted path with its tool, version and change, and the analyzer’s own rates', () => {
    const sut = build(timelineWith([drift])).semantic.toolContracts;
    expect(sut.drift).toEqual([
      {
        at: T0 + 500,
        tool: 'weather',
        version: 'v1.9',
        path: '$.temp_c',
        change: 'type-changed',
        breaking: true,
        detail: 'declared "number", observed string',
        text: 'weather v1.9 $.temp_c type-changed: declared "number", observed string',
      },
    ]);
    expect(sut.rates).toEqual([
      {
        tool: 'weather',
        version: 'v1.9',
        calls: 4,
        checked: 3,
        contractPassRate: 1 / 3,
        fallbackTriggerRate: 0.25,
        source: 'analyzer',
      },
    ]);
  });

  it('takes the semantic-monitor’s run-wide rates once its summary arrived', () => {
    const summary = signal({
      detector: 'semantic-goodput',
      emittedAt: T0 + 900,
      figures: {
        requests: 40,
        'tool.weather@v1.9.calls': 40,
        'tool.weather@v1.9.checked': 40,
        'tool.weather@v1.9.contractPassRate': 0,
        'tool.weather@v1.9.fallbackTriggerRate': 0,
        'tool.weather@v1.9.driftedPaths': 1,
      },
    });
    const sut = build(timelineWith([drift, summary])).semantic.toolContracts;
    expect(sut.rates).toEqual([
      {
        tool: 'weather',
        version: 'v1.9',
        calls: 40,
        checked: 40,
        contractPassRate: 0,
        fallbackTriggerRate: 0,
        source: 'semantic-monitor',
      },
    ]);
  });

  it('lists no drift for a run without schema-drift signals', () => {
    expect(build(timelineWith([])).semantic.toolContracts.drift).toEqual([]);
  });
});
