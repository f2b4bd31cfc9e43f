import type { DetectorSignal } from '@fathom/contracts';
import type { LayerCall, RecordDigest, ToolCallDigest } from '../evidence/record-digest';
import { RunTimeline } from '../evidence/run-timeline';
import { diagnose } from './root-cause.engine';

const T0 = 1_700_000_000_000;
const ONSET = T0 + 5_000;
const NOW = T0 + 8_000;

function digest(at: number, toolCalls: ToolCallDigest[], calls: LayerCall[] = []): RecordDigest {
  return {
    at,
    startedAt: at - 40,
    lateMs: 0,
    ok: true,
    errorClass: null,
    e2eMs: 40,
    ttftMs: null,
    gapMaxMs: null,
    gapMedianMs: null,
    tokenMismatch: null,
    outputTokens: 0,
    riskSegments: null,
    maxWindowEntropyBits: null,
    calls,
    ...(toolCalls.length ? { toolCalls } : {}),
  };
}

const weather = (contractPassed: boolean | null, extra: Partial<ToolCallDigest> = {}): ToolCallDigest => ({
  tool: 'weather',
  version: 'v1.9',
  contractPassed,
  fallback: false,
  fallbackTriggered: false,
  ...extra,
});

/** One weather v1.9 call every 100 ms; `passes(at)` says whether its answer kept the contract. */
function timelineOf(passes: (at: number) => boolean | null, signals: DetectorSignal[] = []): RunTimeline {
  const sut = new RunTimeline();
  const digests: RecordDigest[] = [];
  for (let at = T0 + 100; at <= NOW; at += 100) digests.push(digest(at, [weather(passes(at))]));
  sut.addDigests(digests);
  for (const s of signals) sut.addDetector(s);
  return sut;
}

function driftSignal(
  path: string,
  change: string,
  detail: string,
  at = ONSET + 50,
  breaking = true,
  tool = 'weather',
  version = 'v1.9',
): DetectorSignal {
  return {
    id: `run-1/schema-drift/${tool}/${version}/${path}`,
    campaignId: 'c-1',
    runId: 'run-1',
    schemaVersion: 1,
    emittedAt: at,
    kind: 'detector',
    detector: 'schema-drift',
    requestId: 'r-1',
    severity: breaking ? 'critical' : 'warning',
    message: `tool ${tool} ${version}: ${change} at ${path} (${detail})`,
    figures: { breaking: breaking ? 1 : 0, judgedCalls: 1, status: 200 },
    labels: { tool, version, path, change },
  } as DetectorSignal;
}

function goodputSummary(figures: Record<string, number>, at: number): DetectorSignal {
  return {
    id: 'run-1/semantic-goodput',
    campaignId: 'c-1',
    runId: 'run-1',
    schemaVersion: 1,
    emittedAt: at,
    kind: 'detector',
    detector: 'semantic-goodput',
    requestId: null,
    severity: 'info',
    message: 'goodput 100.0 %',
    figures,
  } as DetectorSignal;
}

const typeChanged = () => driftSignal('$.temp_c', 'type-changed', 'declared "number", observed string');

describe(diagnose.name, () => {
  describe('tool schema drift from schema-drift signals', () => {
    it('ranks tool-schema-drift top with the tool, version, path and change when every recent answer breaks', () => {
      const timeline = timelineOf((at) => at <= ONSET, [typeChanged()]);

      const sut = diagnose(timeline, NOW);

      expect(sut.map((c) => c.kind)).toEqual(['tool-schema-drift']);
      expect(sut[0].confidence).toBe(1);
      expect(sut[0].title).toContain('weather v1.9 ($.temp_c type-changed)');
      expect(sut[0].evidence).toContain(
        'weather v1.9 $.temp_c type-changed: declared "number", observed string',
      );
      expect(sut[0].evidence[0]).toMatch(
        /^weather v1\.9: 30\/30 answers in the last 3\.0 s \(100\.0 %\) break the declared contract \(contract pass rate 0\.0 %\)$/,
      );
      expect(sut[0].figures).toMatchObject({
        'tool.weather@v1.9.driftedPaths': 1,
        'tool.weather@v1.9.breakingPaths': 1,
        'tool.weather@v1.9.judgedCalls': 30,
        'tool.weather@v1.9.brokenCalls': 30,
        'tool.weather@v1.9.contractPassRate': 0,
      });
      // The signal (ONSET + 50) came before the first broken answer ended (ONSET + 100).
      expect(sut[0].since).toBe(ONSET + 50);
      expect(sut[0].until).toBe(NOW);
      expect(sut[0].advice.join(' ')).toContain('v1.9');
    });

    it('names no cause for the same answers without a signal', () => {
      expect(
        diagnose(
          timelineOf(() => true),
          NOW,
        ),
      ).toEqual([]);
      // Broken answers the monitor raised nothing about (no declared contract path) stay unnamed too.
      expect(
        diagnose(
          timelineOf((at) => at <= ONSET),
          NOW,
        ),
      ).toEqual([]);
    });

    it('scales the confidence with the share of recent answers that broke', () => {
      const every = (n: number) => (at: number) => at <= ONSET || Math.round((at - T0) / 100) % n !== 0;
      const half = diagnose(timelineOf(every(2), [typeChanged()]), NOW)[0];
      const quarter = diagnose(timelineOf(every(4), [typeChanged()]), NOW)[0];

      expect(half.figures['tool.weather@v1.9.contractPassRate']).toBeCloseTo(0.5, 5);
      expect(half.confidence).toBeCloseTo(0.8, 5);
      expect(quarter.figures['tool.weather@v1.9.brokenCalls']).toBeLessThan(
        half.figures['tool.weather@v1.9.brokenCalls'],
      );
      expect(quarter.confidence).toBeLessThan(half.confidence);
    });

    it('does not name a breaking drift anew once every recent answer passes again', () => {
      const early = driftSignal('$.temp_c', 'type-changed', 'declared "number", observed string', T0 + 2_500);
      expect(
        diagnose(
          timelineOf(() => true, [early]),
          NOW,
        ),
      ).toEqual([]);
    });

    it('stands on the signal, or the monitor’s run-wide pass rate, when no recent answer was judged', () => {
      const unjudged = timelineOf(() => null, [typeChanged()]);
      expect(diagnose(unjudged, NOW)[0]).toMatchObject({ kind: 'tool-schema-drift', confidence: 0.6 });

      const summarised = timelineOf(
        () => null,
        [
          typeChanged(),
          goodputSummary(
            {
              'tool.weather@v1.9.calls': 80,
              'tool.weather@v1.9.checked': 80,
              'tool.weather@v1.9.contractPassRate': 0.25,
              'tool.weather@v1.9.fallbackTriggerRate': 0,
            },
            NOW,
          ),
        ],
      );
      const sut = diagnose(summarised, NOW)[0];
      expect(sut.confidence).toBeCloseTo(0.9, 5);
      expect(sut.evidence[0]).toContain('run-wide contract pass rate 25.0 % (semantic-monitor)');
    });

    it('names an added field that breaks no reader, ranked low', () => {
      const added = driftSignal(
        '$.region',
        'required-added',
        'not declared, present in 3 of 3 answers since it first appeared',
        ONSET + 50,
        false,
      );
      const sut = diagnose(
        timelineOf(() => true, [added]),
        NOW,
      );
      expect(sut).toHaveLength(1);
      expect(sut[0].confidence).toBe(0.35);
      expect(sut[0].evidence).toContain(
        'weather v1.9 $.region required-added (breaks no reader): not declared, present in 3 of 3 answers since it first appeared',
      );
    });

    it('matches versions written with or without the v', () => {
      const bare = driftSignal(
        '$.temp_c',
        'type-changed',
        'declared "number", observed string',
        ONSET + 50,
        true,
        'weather',
        '1.9',
      );
      const sut = diagnose(
        timelineOf((at) => at <= ONSET, [bare]),
        NOW,
      )[0];
      expect(sut.figures['tool.weather@1.9.brokenCalls']).toBe(30);
    });
  });

  it('still ranks tool-schema-drift from failed response assertions against a clean baseline', () => {
    const timeline = new RunTimeline();
    const call = (ok: boolean): LayerCall => ({
      layer: 'tool:weather',
      path: '/tools/weather/invoke',
      ok,
      status: 200,
      ...(ok ? {} : { error: 'assertion has-conditions failed', assertionFailed: true }),
    });
    const digests: RecordDigest[] = [];
    for (let at = T0 + 100; at <= NOW; at += 100) digests.push(digest(at, [], [call(at <= ONSET)]));
    timeline.addDigests(digests);

    const sut = diagnose(timeline, NOW);

    expect(sut.map((c) => c.kind)).toEqual(['tool-schema-drift']);
    expect(sut[0].confidence).toBe(1);
    expect(sut[0].evidence[0]).toBe(
      '30/30 tool calls (100.0 %) fail their response assertions, baseline 0.0 %',
    );
    expect(sut[0].title).toContain('weather');
  });
});

describe('retrieval mismatch from rag-mismatch signals', () => {
  function ragSignal(at: number, seq: string, over: number, pairs: number): DetectorSignal {
    const mismatched = pairs >= 12 && over / pairs > 0.5 ? 1 : 0;
    return {
      id: `run-1/rag-mismatch/${seq}`,
      campaignId: 'c-1',
      runId: 'run-1',
      schemaVersion: 1,
      emittedAt: at,
      kind: 'detector',
      detector: 'rag-mismatch',
      requestId: null,
      severity: mismatched ? 'warning' : 'info',
      message: mismatched ? 'RAG query/document mismatch' : 'retrieved documents match their queries',
      figures: {
        pairs,
        records: pairs / 3,
        overThreshold: over,
        overThresholdShare: over / pairs,
        thresholdKl: 1.17e-3,
        alarmShare: 0.5,
        minPairs: 12,
        mismatched,
        meanKl: 1.6e-3,
        p95Kl: 2.1e-3,
      },
    } as DetectorSignal;
  }
  /** Healthy retrieve calls every 100 ms (latency is not what is wrong) and the signals. */
  const timeline = (signals: DetectorSignal[]) => {
    const sut = new RunTimeline();
    const digests: RecordDigest[] = [];
    for (let at = T0 + 100; at <= NOW; at += 100) digests.push(digest(at, []));
    sut.addDigests(digests);
    for (const s of signals) sut.addDetector(s);
    return sut;
  };

  it('names retrieval-mismatch while the latest signal says most pairs are over the threshold', () => {
    const signals = [
      ragSignal(T0 + 2_000, 'progress-0', 3, 24),
      ragSignal(ONSET, 'progress-1', 30, 48),
      ragSignal(NOW - 100, 'progress-2', 54, 72),
    ];

    const sut = diagnose(timeline(signals), NOW);

    expect(sut.map((c) => c.kind)).toEqual(['retrieval-mismatch']);
    expect(sut[0].since).toBe(ONSET);
    expect(sut[0].until).toBe(NOW - 100);
    expect(sut[0].confidence).toBeCloseTo(0.85, 5);
    expect(sut[0].evidence[0]).toBe(
      '54/72 query/document pairs (75.0 %) over KL 1.17e-3 nats (softmaxed embeddings), alarm above 50.0 %',
    );
    // The KL threshold was derived on the simulator only, and the cause says so.
    expect(sut[0].thresholds).toContainEqual({
      name: 'KL threshold (nats)',
      value: 1.17e-3,
      source: 'simulator',
      note: expect.stringContaining('simulated target'),
    });
    expect(sut[0].figures).toEqual({
      pairs: 72,
      overThreshold: 54,
      overThresholdShare: 0.75,
      thresholdKl: 1.17e-3,
      meanKl: 1.6e-3,
      p95Kl: 2.1e-3,
    });
  });

  it('names nothing when retrieval matches, before a verdict, or from signals still to come', () => {
    expect(diagnose(timeline([ragSignal(ONSET, 'final', 6, 48)]), NOW)).toEqual([]);
    expect(diagnose(timeline([ragSignal(ONSET, 'progress-0', 9, 9)]), NOW)).toEqual([]);
    // A mismatch first, matching again in the latest signal: over.
    expect(
      diagnose(
        timeline([ragSignal(T0 + 3_000, 'progress-0', 20, 24), ragSignal(ONSET, 'progress-1', 20, 60)]),
        NOW,
      ),
    ).toEqual([]);
    expect(diagnose(timeline([ragSignal(NOW + 500, 'final', 54, 72)]), NOW)).toEqual([]);
  });
});

describe('multi-agent workflows that oscillate or deadlock', () => {
  const agentDigest = (at: number, error: string | null): RecordDigest => ({
    ...digest(
      at,
      [],
      [
        {
          layer: 'agent',
          path: '/agents/run',
          ok: error === null,
          status: 200,
          ...(error === null ? {} : { error }),
        },
      ],
    ),
    ok: error === null,
    errorClass: error === null ? null : 'other',
  });
  /** One workflow every 100 ms; from ONSET on, `fail(i)` says how the i-th one after it ended. */
  const timeline = (fail: (i: number) => string | null) => {
    const sut = new RunTimeline();
    const digests: RecordDigest[] = [];
    let i = 0;
    for (let at = T0 + 100; at <= NOW; at += 100)
      digests.push(agentDigest(at, at <= ONSET ? null : fail(i++)));
    sut.addDigests(digests);
    return sut;
  };

  it('names agent-oscillation when recent workflows oscillate, with the counts and an example', () => {
    const sut = diagnose(
      timeline((i) => (i % 2 === 0 ? 'workflow oscillating after 12 steps' : null)),
      NOW,
    );
    expect(sut.map((c) => c.kind)).toEqual(['agent-oscillation']);
    // Recent span: the 30 workflows of the last 3 s, 15 of them oscillating.
    expect(sut[0].figures).toMatchObject({ workflows: 30, oscillating: 15, deadlocked: 0, share: 0.5 });
    expect(sut[0].confidence).toBeCloseTo(0.775, 5);
    expect(sut[0].evidence).toEqual([
      '15/30 workflows (50.0 %) did not converge: 15 oscillating, 0 deadlocked; 0/15 judged from the steps observed, the rest as the target reported',
      'example: workflow oscillating after 12 steps',
    ]);
    expect(sut[0].since).toBe(ONSET + 100 - 40);
    expect(sut[0].advice.join(' ')).toContain('pressure coefficient');
  });

  it('names agent-deadlock when most stuck workflows end in a wait-for cycle', () => {
    const sut = diagnose(
      timeline((i) =>
        i % 3 === 0
          ? 'workflow oscillating after 12 steps'
          : 'workflow deadlock: wait-for cycle a0 -> a1 -> a0 after 2 steps',
      ),
      NOW,
    );
    expect(sut.map((c) => c.kind)).toEqual(['agent-deadlock']);
    expect(sut[0].figures).toMatchObject({ workflows: 30, oscillating: 10, deadlocked: 20, share: 1 });
    expect(sut[0].evidence[1]).toBe(
      'example: workflow deadlock: wait-for cycle a0 -> a1 -> a0 after 2 steps',
    );
  });

  it('goes by the verdict the driver observed over the target’s status, with the spec lambda that relieves in time', () => {
    const observed = (at: number, verdict: 'oscillating' | 'converged'): RecordDigest => ({
      ...agentDigest(
        at,
        verdict === 'converged' ? null : 'workflow oscillating (observed): 100 % of 30 agent moves return',
      ),
      e2eMs: 400,
      workflow: {
        verdict,
        steps: 12,
        recurrence: verdict === 'converged' ? 0 : 1,
        oscillationScore: 0.12,
        meanActionProbability: 0.5,
        waitForCycle: [],
      },
    });
    const sut = new RunTimeline();
    const digests: RecordDigest[] = [];
    // The target's own status says nothing (every call ok) before ONSET; observed oscillation after.
    for (let at = T0 + 100; at <= NOW; at += 100)
      digests.push(observed(at, at <= ONSET ? 'converged' : 'oscillating'));
    sut.addDigests(digests);
    const [cause] = diagnose(sut, NOW);
    expect(cause).toMatchObject({
      kind: 'agent-oscillation',
      figures: { workflows: 30, oscillating: 30, observedVerdicts: 30, recurrence: 1, pruningLambda: 0.05 },
    });
    expect(cause.evidence[1]).toMatch(
      /^100.0 % of agent moves return .* derived on the simulator\); spec oscillation score 0.120$/,
    );
    expect(cause.advice[0]).toMatch(
      /^prune low-confidence branches with the pressure coefficient lambda 0.05 \(spec: prunes ~47.0 % of branches, relief in ~320 ms; a stuck workflow lasted 400 ms here\)/,
    );
    // A converged verdict observed outweighs a failure the target reported.
    const quiet = new RunTimeline();
    quiet.addDigests(
      digests.map((d) => ({ ...d, workflow: { ...d.workflow!, verdict: 'converged' as const } })),
    );
    expect(diagnose(quiet, NOW)).toEqual([]);
  });

  it('names nothing for workflows that converge, fail otherwise, or stick too rarely', () => {
    expect(
      diagnose(
        timeline(() => null),
        NOW,
      ),
    ).toEqual([]);
    expect(
      diagnose(
        timeline(() => 'workflow incomplete after 12 steps'),
        NOW,
      ),
    ).toEqual([]);
    expect(
      diagnose(
        timeline((i) => (i % 10 === 0 ? 'workflow oscillating after 12 steps' : null)),
        NOW,
      ),
    ).toEqual([]);
  });
});
