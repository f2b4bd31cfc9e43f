/**
 * @jest-environment ./libs/semantic/src/testing/ort.jest-environment.js
 */
import 'reflect-metadata';
import { createBus, type Bus } from '@fathom/bus';
import {
  Detectors,
  Topics,
  envelope,
  type DetectorSignal,
  type RequestRecord,
  type RequestTelemetry,
  type SemanticSignal,
} from '@fathom/contracts';
import { createFathomApp, type FathomApp } from '@fathom/runtime';
import { BUNDLED_ANOMALY_MODEL, LlmMonitor } from '@fathom/semantic';
import { planOutput } from '@fathom/sim';

function record(
  requestId: string,
  content: string,
  failure?: { status: number; body: string },
): RequestRecord {
  return {
    requestId,
    shard: 0,
    scheduledAt: 1_000,
    startedAt: 1_000,
    ttftMs: failure ? null : 40,
    e2eMs: 300,
    correctedE2eMs: 300,
    chunkOffsetsMs: failure ? [] : [40],
    status: failure?.status ?? 200,
    errorClass: failure ? (failure.status >= 500 ? 'http-5xx' : 'http-4xx') : null,
    ...(failure ? { errorMessage: `HTTP ${failure.status}: ${failure.body}` } : {}),
    inputTokensClient: 20,
    outputTokensClient: 12,
    usage: null,
    content,
    finishReason: failure ? null : 'stop',
  };
}

const RECORDS = [
  record('canonical-refusal', "I'm sorry, but I can't help with that."),
  record('paraphrased-refusal', 'Unfortunately that is not something I am able to assist with.'),
  record('clean', 'The meeting moved to Thursday at 10, and the agenda is unchanged.'),
  record('error-in-200', '{"error": {"message": "model overloaded", "type": "server_error"}}'),
  record('plain-5xx', '', { status: 503, body: '{"error": {"message": "Service Unavailable"}}' }),
  record('refusal-as-400', '', { status: 400, body: "I'm sorry, but I can't help with that request." }),
];

async function startMonitor(bus: Bus, model: string | undefined): Promise<FathomApp> {
  process.env.FATHOM_SEMANTIC_EMBEDDER = 'off';
  if (model === undefined) delete process.env.FATHOM_LLM_MONITOR_MODEL;
  else process.env.FATHOM_LLM_MONITOR_MODEL = model;
  try {
    return await createFathomApp({ services: ['semantic-monitor'], bus, port: 0, logLevels: ['error'] });
  } finally {
    delete process.env.FATHOM_SEMANTIC_EMBEDDER;
    delete process.env.FATHOM_LLM_MONITOR_MODEL;
  }
}

/**
 * The LLM monitor inside the semantic-monitor service: telemetry records in, `semantic-anomaly`
 * signals out (rules first, then the bundled model), its counts in the run's goodput summary;
 * with a model that cannot load, the rules still run and the run is told why.
 */
describe('semantic-monitor: LLM-as-a-monitor on the telemetry stream', () => {
  jest.setTimeout(60_000);
  const apps: FathomApp[] = [];
  const buses: Bus[] = [];

  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const bus of buses) await bus.close();
  });

  async function runThrough(model: string | undefined, runId: string): Promise<DetectorSignal[]> {
    const bus = createBus({ kind: 'memory' });
    buses.push(bus);
    apps.push(await startMonitor(bus, model));
    const signals: SemanticSignal[] = [];
    await bus.subscribe(Topics.semanticSignal, { group: `test-${runId}` }, (s) => void signals.push(s));
    const batch: RequestTelemetry = { ...envelope('c-llm', runId), generatorId: 'g1', records: RECORDS };
    await bus.publish(Topics.requestTelemetry, batch);
    await bus.publish(Topics.runLifecycle, {
      ...envelope('c-llm', runId),
      phase: 'shard-finished',
      shard: { index: 0, count: 1 },
      generatorId: 'g1',
      counts: { sent: 6, completed: 6, errors: 2, dropped: 0, recordsPublished: 6, windowsPublished: 0 },
    });
    const deadline = Date.now() + 20_000;
    const detectors = () => signals.filter((s): s is DetectorSignal => s.kind === 'detector');
    while (!detectors().some((s) => s.detector === Detectors.semanticGoodput)) {
      if (Date.now() > deadline) throw new Error('no semantic-goodput signal');
      await new Promise((r) => setTimeout(r, 10));
    }
    return detectors();
  }

  it('signals rule and model anomalies per request, and not a failed request’s own error body', async () => {
    const signals = await runThrough(undefined, 'r-llm-model');
    const anomalies = signals.filter((s) => s.detector === Detectors.semanticAnomaly);
    const byRequest = Object.fromEntries(
      anomalies.map((s) => [`${s.requestId}/${s.labels?.fragment}`, [s.labels?.decidedBy, s.labels?.label]]),
    );
    expect(byRequest).toEqual({
      'canonical-refusal/response': ['rule', 'refusal'],
      'paraphrased-refusal/response': ['model', 'refusal'],
      'error-in-200/response': ['rule', 'error-body'],
      'refusal-as-400/error': ['rule', 'refusal'],
    });
    const paraphrased = anomalies.find((s) => s.requestId === 'paraphrased-refusal')!;
    expect(paraphrased.figures.confidence).toBeGreaterThanOrEqual(0.9);
    expect(paraphrased.message).toMatch(/refusal \(model confidence 0\.\d\d\)/);
    expect(signals.some((s) => s.detector === Detectors.monitorFault)).toBe(false);
    const goodput = signals.find((s) => s.detector === Detectors.semanticGoodput)!;
    expect(goodput.figures).toMatchObject({
      'llmMonitor.fragments': 6,
      'llmMonitor.anomalies': 4,
      'llmMonitor.ruleHits': 3,
      'llmMonitor.modelHits': 1,
    });
  });

  it('runs the rules only when the model cannot load, and tells the run why', async () => {
    const signals = await runThrough('/nonexistent/anomaly-head.onnx', 'r-llm-rules');
    const faults = signals.filter((s) => s.detector === Detectors.monitorFault);
    expect(faults).toHaveLength(1);
    expect(faults[0].message).toMatch(
      /LLM monitor on rules only: anomaly model \/nonexistent\/anomaly-head\.onnx failed to load/,
    );
    const anomalies = signals.filter((s) => s.detector === Detectors.semanticAnomaly);
    expect(anomalies.map((s) => s.requestId).sort()).toEqual([
      'canonical-refusal',
      'error-in-200',
      'refusal-as-400',
    ]);
    expect(anomalies.every((s) => s.labels?.decidedBy === 'rule')).toBe(true);
  });
});

describe('the bundled anomaly head on the simulator’s responses', () => {
  it('flags at most 1 % of them (the simulator’s word salad is its normal)', async () => {
    const texts = Array.from({ length: 300 }, (_, i) =>
      planOutput({
        seed: i,
        promptText: `Explain topic ${i}.`,
        tokens: 16 + (i % 200),
        hallucinationRate: 0.2,
        groundedEntropyBits: 2.1,
        groundedEntropySd: 0.3,
        hallucinatedEntropyBits: 4.8,
        hallucinatedEntropySd: 0.5,
      })
        .tokens.map((t) => t.text)
        .join(''),
    );
    const sut = await LlmMonitor.load(BUNDLED_ANOMALY_MODEL);
    expect(sut.state.kind).toBe('model');
    const verdicts = await sut.assess(texts.map((text) => ({ source: 'response' as const, text })));
    expect(verdicts.filter((v) => v.anomalous).length).toBeLessThanOrEqual(3);
    await sut.close();
  });
});
