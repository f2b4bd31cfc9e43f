import { randomUUID } from 'node:crypto';
import { createBus, type Bus } from '@fathom/bus';
import {
  CampaignSpecSchema,
  Topics,
  envelope,
  type RunLifecycle,
  type TelemetryWindow,
} from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { startKafkaBroker, waitFor, type KafkaBroker } from '@fathom/testing';
import { createFathomApp, type FathomApp } from '@fathom/runtime';

/** Requests the simulated target says it served: the sum of its `vllm:request_success_total`. */
async function served(sim: SimTarget): Promise<number> {
  const text = await (await fetch(`${sim.url}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('vllm:request_success_total')) total += Number(line.split(' ').pop());
  return total;
}

/**
 * The broker goes down for 22 s in the middle of a shard (longer than the Kafka client's own
 * retries, ~17 s): the generator keeps the windows the bus refused and sends them when the broker
 * is back, so the windows a consumer receives hold every request the target served.
 */
describe('a load-generator across a broker outage', () => {
  jest.setTimeout(150_000);
  let broker: KafkaBroker;
  let sim: SimTarget;
  let generatorBus: Bus;
  let testBus: Bus;
  let sut: FathomApp;

  beforeAll(async () => {
    broker = await startKafkaBroker({ partitions: 1 });
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.2 } });
    const kafka = (clientId: string): Bus =>
      createBus({
        kind: 'kafka',
        brokers: broker.brokers,
        clientId,
        consumer: { sessionTimeout: 3000, heartbeatInterval: 300, maxWaitTimeInMs: 200 },
      });
    generatorBus = kafka('outage-generator');
    testBus = kafka('outage-test');
    sut = await createFathomApp({
      services: ['load-generator'],
      bus: generatorBus,
      logLevels: false,
      env: { FATHOM_GENERATOR_ID: 'lg-outage' },
    });
  });

  afterAll(async () => {
    await sut?.close();
    await generatorBus?.close();
    await testBus?.close();
    await sim?.close();
    await broker?.stop();
  });

  it('delivers every window once the broker is back: their requests match what the target served', async () => {
    const campaignId = randomUUID();
    const runId = randomUUID();
    const windows = new Map<string, TelemetryWindow>();
    const ends: RunLifecycle[] = [];
    let started = false;
    await testBus.subscribe(Topics.telemetryWindow, { group: `w-${runId}`, fromBeginning: true }, (w) => {
      if (w.runId === runId) windows.set(`${w.generatorId}/${w.shard}/${w.seq}`, w);
    });
    await testBus.subscribe(Topics.runLifecycle, { group: `l-${runId}`, fromBeginning: true }, (l) => {
      if (l.runId !== runId) return;
      if (l.phase === 'shard-started') started = true;
      else ends.push(l);
    });
    const before = await served(sim);
    await testBus.publish(Topics.runShard, {
      ...envelope(campaignId, runId),
      kind: 'start-shard',
      shard: { index: 0, count: 1 },
      spec: CampaignSpecSchema.parse({
        name: 'broker outage',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'chat', prompts: ['Tell me about load testing.'], maxTokens: 16 },
        load: { concurrency: 4, durationMs: 30_000, recordSampleRate: 0 },
      }),
      trigger: 'api',
    });
    await waitFor(() => started, { timeoutMs: 30_000, description: 'the shard to start' });
    await new Promise((wake) => setTimeout(wake, 4_000));
    await broker.down();
    await new Promise((wake) => setTimeout(wake, 22_000));
    await broker.up();

    const [end] = await waitFor(() => (ends.length ? ends : null), {
      timeoutMs: 120_000,
      description: 'the shard to end',
    });
    const target = (await served(sim)) - before;
    await waitFor(() => windows.size >= end.counts.windowsPublished, {
      timeoutMs: 20_000,
      description: 'every published window',
    });
    const measured = [...windows.values()].reduce((n, w) => n + w.requests, 0);

    expect(end.phase).toBe('shard-finished');
    expect(end.counts.sent).toBeGreaterThan(0);
    // Every request the generator sent is in a delivered window, and the target served them all.
    expect(measured).toBe(end.counts.sent);
    expect(measured).toBe(target);
  });
});
