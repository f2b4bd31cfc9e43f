import type { DetectorSignal, MeasurementValidity, RunSummary } from '@fathom/contracts';
import type { RecordDigest } from '../evidence/record-digest';
import { RunTimeline } from '../evidence/run-timeline';
import { buildRunReportDocument } from './run-report.document';

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
