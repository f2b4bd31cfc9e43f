import { Registry } from 'prom-client';
import type { Bus } from '@fathom/bus';
import { Topics, type RequestRecord, type RequestTelemetry, type TelemetryWindow } from '@fathom/contracts';
import { mergeWindows, type WindowSnapshot } from '@fathom/load';
import { LoadMetrics } from './load.metrics';
import { TelemetryPublisher } from './telemetry.publisher';

function record(i: number, logprobTokens = 0): RequestRecord {
  const r: RequestRecord = {
    requestId: `run-0-${i}`,
    shard: 0,
    scheduledAt: 1_700_000_000_000 + i,
    startedAt: 1_700_000_000_000 + i,
    ttftMs: 12,
    e2eMs: 800,
    tpotMs: 12,
    correctedE2eMs: 801,
    chunkOffsetsMs: Array.from({ length: 64 }, (_, k) => 12 + k * 12.3),
    status: 200,
    errorClass: null,
    inputTokensClient: 30,
    outputTokensClient: 64,
    usage: { promptTokens: 30, completionTokens: 64, cachedTokens: null },
    content: 'lorem ipsum dolor sit amet '.repeat(12),
    prompt: 'Explain prefix caching in two sentences.',
    finishReason: 'length',
  };
  if (logprobTokens > 0)
    r.logprobs = Array.from({ length: logprobTokens }, (_, k) => ({
      token: ` w${k}`,
      logprob: -0.1 * k,
      top: Array.from({ length: 5 }, (_, j) => ({ token: ` t${j}`, logprob: -j })),
    }));
  return r;
}

/** A bus that keeps what is published (and checks it against the topic, as the real ones do). */
function capturingBus(): { bus: Bus; events: RequestTelemetry[] } {
  const events: RequestTelemetry[] = [];
  const bus = {
    publish: (topic: { name: string }, event: RequestTelemetry) => {
      expect(topic.name).toBe(Topics.requestTelemetry.name);
      expect(Topics.requestTelemetry.schema.safeParse(event).success).toBe(true);
      events.push(event);
      return Promise.resolve();
    },
  } as unknown as Bus;
  return { bus, events };
}

describe(TelemetryPublisher.name, () => {
  const metrics = () => new LoadMetrics(new Registry());

  it('never encodes on the engine callback: a full batch is published in a later macrotask', async () => {
    const { bus, events } = capturingBus();
    const sut = new TelemetryPublisher(bus, 'c', 'r', 'g', metrics());
    for (let i = 0; i < 200; i++) sut.record(record(i));
    expect(events).toHaveLength(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(events.length).toBeGreaterThan(0);
    await sut.drain();
  });

  it('keeps messages near the byte budget: records with logprobs go out a few at a time', async () => {
    const { bus, events } = capturingBus();
    const sut = new TelemetryPublisher(bus, 'c', 'r', 'g', metrics());
    for (let i = 0; i < 200; i++) sut.record(record(i, 64));
    await sut.drain();
    for (const event of events) expect(Buffer.byteLength(JSON.stringify(event))).toBeLessThan(128 * 1024);
    expect(events.length).toBeGreaterThan(10);
  });

  it('counts retrieved documents in the byte budget: RAG records with 3 x 512-char documents stay near it', async () => {
    const { bus, events } = capturingBus();
    const sut = new TelemetryPublisher(bus, 'c', 'r', 'g', metrics());
    for (let i = 0; i < 200; i++)
      sut.record({ ...record(i), retrievedDocuments: ['a', 'b', 'c'].map((c) => c.repeat(512)) });
    await sut.drain();
    // 64 KB estimated is the budget; JSON is within ~10 % of the estimate when documents count.
    for (const event of events) expect(Buffer.byteLength(JSON.stringify(event))).toBeLessThan(72 * 1024);
    expect(events.flatMap((e) => e.records)).toHaveLength(200);
  });

  it('publishes every record exactly once, in order, and counts them', async () => {
    const { bus, events } = capturingBus();
    const sut = new TelemetryPublisher(bus, 'c', 'r', 'g', metrics());
    for (let i = 0; i < 1000; i++) sut.record(record(i, i % 3 === 0 ? 32 : 0));
    await sut.drain();
    const ids = events.flatMap((e) => e.records.map((r) => r.requestId));
    expect(ids).toEqual(Array.from({ length: 1000 }, (_, i) => `run-0-${i}`));
    expect(sut.recordsPublished).toBe(1000);
  });

  describe('when the bus refuses (broker down)', () => {
    const EMPTY = mergeWindows([]).histogramsUs.e2e;
    const snapshot = (seq: number): WindowSnapshot => ({
      shard: 0,
      windowStart: 1_700_000_000_000 + seq * 1000,
      windowMs: 1000,
      seq,
      requests: 10,
      errors: 0,
      errorClasses: {},
      dropped: 0,
      late: 0,
      inputTokens: 10,
      outputTokens: 10,
      histogramsUs: { e2e: EMPTY, correctedE2e: EMPTY, ttft: EMPTY, itl: EMPTY, tpot: EMPTY },
    });
    /** A bus that refuses every publish while `down` is set. */
    const flakyBus = () => {
      const state = { down: true, windows: [] as TelemetryWindow[] };
      const bus = {
        publish: (topic: { name: string }, event: TelemetryWindow) => {
          if (state.down) return Promise.reject(new Error('broker down'));
          if (topic.name === Topics.telemetryWindow.name) state.windows.push(event);
          return Promise.resolve();
        },
      } as unknown as Bus;
      return { bus, state };
    };

    it('keeps the windows it refused and sends them, in order, once it takes them again', async () => {
      const { bus, state } = flakyBus();
      const sut = new TelemetryPublisher(bus, 'c', 'r', 'g', metrics());
      for (let seq = 0; seq < 5; seq++) sut.window(snapshot(seq));
      await new Promise((wake) => setTimeout(wake, 600)); // a few refused resends
      state.down = false;

      await sut.drain(10_000);

      expect(state.windows.map((w) => w.seq)).toEqual([0, 1, 2, 3, 4]);
      expect(sut.windowsPublished).toBe(5);
      expect(sut.windowsLost).toBe(0);
      expect(sut.publishFailures).toBeGreaterThanOrEqual(5);
    });

    it('counts as lost what the bus still refuses when its patience ran out', async () => {
      const { bus } = flakyBus();
      const sut = new TelemetryPublisher(bus, 'c', 'r', 'g', metrics());
      for (let seq = 0; seq < 3; seq++) sut.window(snapshot(seq));
      sut.record(record(0));

      await sut.drain(300);

      expect(sut.windowsPublished).toBe(0);
      expect(sut.windowsLost).toBe(3);
      expect(sut.recordsLost).toBe(1);
    });
  });
});
