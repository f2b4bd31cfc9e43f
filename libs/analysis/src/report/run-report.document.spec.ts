import {
  envelope,
  type DetectorSignal,
  type MeasurementValidity,
  type RunSummary,
  type TelemetryWindow,
} from '@fathom/contracts';
import { decodeHistogram, encodeHistogram, mergeWindows } from '@fathom/load';
import { DEFAULT_TIER_SPECS } from '../objectives/objective.model';
import type { RecordDigest } from '../evidence/record-digest';
import { RunTimeline } from '../evidence/run-timeline';
import { buildRunReportDocument, judgeWholeRun } from './run-report.document';

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

describe(judgeWholeRun.name, () => {
  /** `seconds` one-second windows of 50 requests each taking `ms`, `errors` of them failed. */
  function timelineOf(seconds: number, ms: number, errors: number): RunTimeline {
    const h = decodeHistogram(mergeWindows([]).histogramsUs.e2e);
    h.recordValueWithCount(Math.round(ms * 1000), 50);
    const latency = encodeHistogram(h);
    const timeline = new RunTimeline();
    for (let seq = 0; seq < seconds; seq++) {
      const window: TelemetryWindow = {
        ...envelope('c', 'r', 1_000 * (seq + 1)),
        generatorId: 'g',
        shard: 0,
        windowStart: 1_000 * seq,
        windowMs: 1_000,
        seq,
        requests: 50,
        errors,
        errorClasses: errors ? { 'http-5xx': errors } : {},
        dropped: 0,
        late: 0,
        inputTokens: 0,
        outputTokens: 0,
        histogramsUs: { e2e: latency, correctedE2e: latency, ttft: latency, itl: latency },
      };
      timeline.addWindow(window);
    }
    return timeline;
  }

  it('puts a run where every request failed in no tier, as its own objectives say', () => {
    const sut = judgeWholeRun(timelineOf(3, 2, 50), DEFAULT_TIER_SPECS, []);
    expect(sut.tier).toBe('SLO-breach');
    expect(sut.objectives['SLO-1'].find((o) => o.objective === 'availability')).toMatchObject({
      value: 0,
      ok: false,
    });
    expect(sut.reason).toMatch(
      /^no tier had all its objectives hold: SLO-0 missed: availability 0\.00 %.*; SLO-1 missed: availability 0\.00 %/,
    );
  });

  it('names the best tier that held and what the tier above missed', () => {
    const sut = judgeWholeRun(timelineOf(10, 1000, 0), DEFAULT_TIER_SPECS, []);
    expect(sut.tier).toBe('SLO-1');
    expect(sut.reason).toMatch(/^SLO-0 missed: correctedE2e p99 10\d\d\.\d ms > 800 ms$/);
  });

  it('gives no tier to a run without requests', () => {
    expect(judgeWholeRun(new RunTimeline(), DEFAULT_TIER_SPECS, [])).toMatchObject({ tier: null });
  });

  it('agrees with the report document it is part of', () => {
    const timeline = timelineOf(3, 2, 50);
    const document = buildRunReportDocument({
      runId: 'r',
      campaignId: 'c',
      summary: {} as RunSummary,
      timeline,
      tiers: DEFAULT_TIER_SPECS,
      // The course during the run ended in SLO-1 (a short run, hysteresis): the whole run decides.
      tierChanges: [{ ...envelope('c', 'r', 1), from: 'SLO-0', to: 'SLO-1', reason: 'x', figures: {} }],
      breakerChanges: [],
      rootCauses: [],
      validity: { valid: true, reasons: [] },
      stallMs: 500,
    });
    expect(document.tiers.final).toBe('SLO-breach');
    expect(document.tiers.changes.map((c) => c.to)).toEqual(['SLO-1']);
  });
});
