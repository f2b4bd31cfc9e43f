import { Detectors } from '@fathom/contracts';
import 'reflect-metadata';
import { createBus, decodeEvent, type Bus } from '@fathom/bus';
import {
  Topics,
  envelope,
  type DeadLetter,
  type DetectorSignal,
  type RequestRecord,
  type RequestTelemetry,
  perRecordSignals,
  type RecordSemanticSignal,
  type TokenLogprob,
} from '@fathom/contracts';
import { ResponseAssessor, type WorkerEmbedder } from '@fathom/semantic';
import { createFathomApp, type FathomApp } from '@fathom/runtime';
import { SemanticMonitorService } from '@fathom/semantic-monitor';

/** A streamed response of `tokens` tokens, each with 5 alternatives (what the bench's sim sends). */
function record(requestId: string, tokens = 64): RequestRecord {
  const logprobs: TokenLogprob[] = Array.from({ length: tokens }, (_, i) => ({
    token: `t${i}`,
    logprob: -0.1,
    top: Array.from({ length: 5 }, (_, k) => ({ token: k === 0 ? `t${i}` : `a${k}`, logprob: -0.1 - k })),
  }));
  return {
    requestId,
    shard: 0,
    scheduledAt: 1_000,
    startedAt: 1_000,
    ttftMs: 40,
    e2eMs: 300,
    correctedE2eMs: 300,
    chunkOffsetsMs: Array.from({ length: tokens }, (_, i) => 40 + i),
    status: 200,
    errorClass: null,
    inputTokensClient: 20,
    outputTokensClient: tokens,
    usage: null,
    content: `response ${requestId}`,
    finishReason: 'stop',
    logprobs,
  };
}

function telemetry(runId: string, prefix: string, n: number): RequestTelemetry {
  return {
    ...envelope('c-sliced', runId),
    generatorId: 'g1',
    records: Array.from({ length: n }, (_, i) => record(`${prefix}-${i}`)),
  };
}

/**
 * The monitor shares the event loop with the load-generator in the embedded runtime: a
 * 200-record telemetry message must be validated and assessed in slices (other tasks run in
 * between), and slicing must neither lose nor double-count a record.
 */
describe('semantic-monitor assesses telemetry in time slices', () => {
  jest.setTimeout(60_000);
  let bus: Bus;
  let app: FathomApp;
  const signals: RecordSemanticSignal[] = [];
  const deadLetters: DeadLetter[] = [];
  const assess = ResponseAssessor.prototype.assess;
  let assessed = 0;
  let onAssess: (() => void) | null = null;

  beforeAll(async () => {
    process.env.FATHOM_SEMANTIC_EMBEDDER = 'off';
    ResponseAssessor.prototype.assess = function countedAssess(this: ResponseAssessor, ...args) {
      assessed++;
      onAssess?.();
      return assess.apply(this, args);
    };
    bus = createBus({ kind: 'memory' });
    app = await createFathomApp({ services: ['semantic-monitor'], bus, port: 0, logLevels: ['error'] });
    await bus.subscribe(Topics.semanticSignal, { group: 'test-sliced' }, (s) => void signals.push(...perRecordSignals(s)));
    await bus.subscribe(Topics.deadLetter, { group: 'test-sliced-dlq' }, (d) => void deadLetters.push(d));
  });

  afterAll(async () => {
    ResponseAssessor.prototype.assess = assess;
    await app?.close();
    await bus?.close();
    delete process.env.FATHOM_SEMANTIC_EMBEDDER;
  });

  async function until(done: () => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  it('runs a setImmediate scheduled at the first record before the 200-record message is assessed', async () => {
    const runId = 'r-yield';
    const start = assessed;
    let assessedWhenImmediateRan: number | null = null;
    onAssess = () => {
      onAssess = null;
      setImmediate(() => (assessedWhenImmediateRan = assessed - start));
    };
    await bus.publish(Topics.requestTelemetry, telemetry(runId, 'y', 200));
    await until(() => signals.filter((s) => s.runId === runId && s.kind === 'token-stats').length === 200);
    // Unsliced, the immediate runs only after all 200 (about 20-100 ms of work).
    expect(assessedWhenImmediateRan).not.toBeNull();
    expect(assessedWhenImmediateRan).toBeLessThan(200);
  });

  it('counts every record of concurrent messages once (token stats and goodput)', async () => {
    const runId = 'r-count';
    const messages = Array.from({ length: 6 }, (_, m) => telemetry(runId, `m${m}`, 200));
    // Different keys: the bus spreads them over its partitions, so their slices interleave.
    await bus.publishMany(Topics.requestTelemetry, messages);
    // A redelivered message (same event id) is not counted again.
    await bus.publish(Topics.requestTelemetry, messages[0]);
    await bus.publish(Topics.runLifecycle, {
      ...envelope('c-sliced', runId),
      phase: 'shard-finished',
      shard: { index: 0, count: 1 },
      generatorId: 'g1',
      counts: {
        sent: 1200,
        completed: 1200,
        errors: 0,
        dropped: 0,
        recordsPublished: 1200,
        windowsPublished: 0,
      },
    });
    const goodputOf = () =>
      signals.find(
        (s): s is DetectorSignal =>
          s.runId === runId && s.kind === 'detector' && s.detector === Detectors.semanticGoodput,
      );
    await until(() => goodputOf() !== undefined);
    const stats = signals.filter((s) => s.runId === runId && s.kind === 'token-stats');
    expect(stats).toHaveLength(1200);
    expect(new Set(stats.map((s) => (s.kind === 'token-stats' ? s.requestId : ''))).size).toBe(1200);
    expect(goodputOf()?.figures).toMatchObject({
      requests: 1200,
      expectedRecords: 1200,
      complete: 1,
      goodput: 1,
    });
    // Within a message the signals keep the records' order.
    const ofFirst = stats.filter((s) => s.kind === 'token-stats' && s.requestId.startsWith('m0-'));
    expect(ofFirst.map((s) => (s.kind === 'token-stats' ? s.requestId : ''))).toEqual(
      messages[0].records.map((r) => r.requestId),
    );
  });

  it('dead-letters a message whose record fails validation, and assesses none of it', async () => {
    const runId = 'r-invalid';
    const bad = telemetry(runId, 'bad', 150);
    (bad.records[120] as unknown as { status: string }).status = 'two hundred';
    await bus.publishRaw(Topics.requestTelemetry.name, JSON.stringify(bad), `${runId}/${bad.id}`);
    await bus.publish(Topics.requestTelemetry, telemetry(runId, 'good', 3));
    await until(() => signals.filter((s) => s.runId === runId && s.kind === 'token-stats').length === 3);
    await until(() => deadLetters.some((d) => d.runId === runId));
    const letter = deadLetters.find((d) => d.runId === runId) as DeadLetter;
    expect(letter).toMatchObject({ reason: 'schema-mismatch', originalTopic: Topics.requestTelemetry.name });
    expect(letter.error).toContain('records[120]');
    const payload = decodeEvent(Topics.requestTelemetry.schema, Buffer.from(letter.payloadBase64, 'base64'));
    expect(payload.ok).toBe(false); // the bytes kept are the invalid message itself
    expect(signals.filter((s) => s.runId === runId && s.kind === 'token-stats')).toHaveLength(3);
  });
});

describe('semantic-monitor when its embedding worker dies', () => {
  jest.setTimeout(90_000);

  it('reports a monitor fault, goes on assessing, and embeds again after the restart', async () => {
    process.env.FATHOM_SEMANTIC_MIN_SAMPLE_RATE = '1';
    // Only the embedder's faults here: under jest's vm the anomaly model cannot run (typed
    // arrays of another realm), and its rules-only notice would be a monitor fault too.
    process.env.FATHOM_LLM_MONITOR_MODEL = 'off';
    const bus = createBus({ kind: 'memory' });
    const app = await createFathomApp({ services: ['semantic-monitor'], bus, port: 0, logLevels: ['error'] });
    const signals: RecordSemanticSignal[] = [];
    await bus.subscribe(Topics.semanticSignal, { group: 'test-fault' }, (s) => void signals.push(...perRecordSignals(s)));
    const runId = 'r-fault';
    const until = async (done: () => boolean) => {
      const deadline = Date.now() + 60_000;
      while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(done()).toBe(true);
    };
    try {
      const monitor = app.app.get(SemanticMonitorService);
      // The service's own worker (private, in its sampler): killed as a crash would kill it.
      const worker = () =>
        (monitor as unknown as { sampler: { worker: WorkerEmbedder | null } }).sampler.worker;
      await bus.publish(Topics.requestTelemetry, telemetry(runId, 'a', 5));
      await until(() => worker()?.available === true);
      await worker()?.killWorker();
      const faults = () =>
        signals.filter(
          (s): s is DetectorSignal =>
            s.runId === runId && s.kind === 'detector' && s.detector === Detectors.monitorFault,
        );
      await until(() => faults().length === 1);
      expect(faults()[0].message).toMatch(/embedding worker died/);
      // Assessment goes on while the worker is down.
      await bus.publish(Topics.requestTelemetry, telemetry(runId, 'b', 5));
      await until(() => signals.filter((s) => s.runId === runId && s.kind === 'token-stats').length === 10);
      await until(() => worker()?.available === true);
      const embeddedBefore = worker()?.embeddedTexts ?? 0;
      await bus.publish(Topics.requestTelemetry, telemetry(runId, 'c', 5));
      await until(() => (worker()?.embeddedTexts ?? 0) > embeddedBefore);
      expect(worker()?.starts).toBe(2);
    } finally {
      await app.close();
      await bus.close();
      delete process.env.FATHOM_SEMANTIC_MIN_SAMPLE_RATE;
      delete process.env.FATHOM_LLM_MONITOR_MODEL;
    }
  });
});
