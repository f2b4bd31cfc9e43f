import { randomUUID } from 'node:crypto';
import { Topics, envelope, type RequestTelemetry, type RunLifecycle } from '@fathom/contracts';
import { startKafkaBroker, testKafkaConfig, waitFor } from '@fathom/testing';
import { Inbox, lifecycleEvent, recordingBusLogger } from './bus.contract-suite';
import { KafkaBus } from './kafka.transport';

// Kafka-only behaviour (the shared contract runs in kafka.transport.int-spec.ts); a separate
// file so that jest runs it beside the contract suite.

/** A Kafka bus on the run's shared test broker (jest global setup), quiet, fast retries. */
function testBus(config = testKafkaConfig('bus')): KafkaBus {
  return new KafkaBus({ ...config, logger: recordingBusLogger(), retryBackoffMs: () => 20 });
}

describe(`${KafkaBus.name} over the Kafka-protocol test broker`, () => {
  const closeAfter: KafkaBus[] = [];
  afterEach(async () => {
    await Promise.all(closeAfter.splice(0).map((bus) => bus.close()));
  });

  it('resumes a restarted consumer from the committed offset with nothing lost', async () => {
    const config = testKafkaConfig('bus-restart');
    const group = config.group('analyzer');
    const campaignId = `campaign-${randomUUID()}`;
    const total = 200;
    const publisher = testBus(config);
    closeAfter.push(publisher);
    const events = Array.from({ length: total }, (_, i) => lifecycleEvent(campaignId, `run-${i % 7}`, i));
    await publisher.publishMany(Topics.runLifecycle, events);

    const handledBy = { first: [] as string[], second: [] as string[] };
    const handler = (into: string[]) => async (event: RunLifecycle) => {
      if (event.campaignId !== campaignId) return;
      into.push(event.id);
      await new Promise((wake) => setTimeout(wake, 5)); // a handler that takes time, so we stop mid-stream
    };
    const first = testBus(config);
    await first.subscribe(Topics.runLifecycle, { group, fromBeginning: true }, handler(handledBy.first));
    await waitFor(() => handledBy.first.length >= 60, {
      timeoutMs: 20_000,
      description: '60 events on the first consumer',
    });
    await first.close();
    const handledBeforeStop = handledBy.first.length;
    expect(handledBeforeStop).toBeLessThan(total);

    const second = testBus(config);
    closeAfter.push(second);
    await second.subscribe(Topics.runLifecycle, { group, fromBeginning: true }, handler(handledBy.second));
    await waitFor(() => new Set([...handledBy.first, ...handledBy.second]).size === total, {
      timeoutMs: 20_000,
      description: `all ${total} events over both consumers`,
    });
    await new Promise((wake) => setTimeout(wake, 500)); // anything redelivered would arrive now

    // Nothing lost, and the second consumer started where the first one committed: a graceful
    // stop commits what was handled, so not even one event comes twice.
    expect(new Set([...handledBy.first, ...handledBy.second]).size).toBe(total);
    expect(handledBy.first.length + handledBy.second.length).toBe(total);
  });

  it('delivers 1,000 telemetry events published as one batch', async () => {
    const config = testKafkaConfig('bus-batch');
    const campaignId = `campaign-${randomUUID()}`;
    const bus = testBus(config);
    closeAfter.push(bus);
    const batch: RequestTelemetry[] = Array.from({ length: 1000 }, (_, i) => ({
      ...envelope(campaignId, 'run-batch'),
      generatorId: 'gen-1',
      records: [
        {
          requestId: `req-${i}`,
          shard: 0,
          scheduledAt: 1_700_000_000_000 + i,
          startedAt: 1_700_000_000_000 + i,
          ttftMs: 12.5,
          e2eMs: 80,
          correctedE2eMs: 81,
          chunkOffsetsMs: [12.5, 30, 55, 80],
          status: 200,
          errorClass: null,
          inputTokensClient: 20,
          outputTokensClient: 4,
          usage: null,
          content: 'four tokens of output',
          finishReason: 'stop',
        },
      ],
    }));
    const received = new Inbox<string>();
    await bus.subscribe(
      Topics.requestTelemetry,
      { group: config.group('semantic'), fromBeginning: true },
      (event) => {
        if (event.campaignId === campaignId) received.push(event.records[0].requestId);
      },
    );
    await bus.publishMany(Topics.requestTelemetry, batch);
    await received.until((items) => new Set(items).size === 1000, '1000 telemetry events', 30_000);
    expect(new Set(received.items)).toEqual(new Set(batch.map((e) => e.records[0].requestId)));
  });

  it('logs, and carries on, when the broker refuses to create topics', async () => {
    const logger = recordingBusLogger();
    const bus = new KafkaBus({ ...testKafkaConfig('bus-admin'), logger });
    closeAfter.push(bus);
    await bus.publish(Topics.runLifecycle, lifecycleEvent('campaign-admin', 'run-admin', 0));
    expect(logger.lines.some((line) => line.startsWith('warn could not create the Fathom topics'))).toBe(
      true,
    );
  });

  it('keeps publishing and consuming across a broker outage', async () => {
    // Its own broker: taking the shared one down would disturb the tests running beside this.
    const broker = await startKafkaBroker();
    const config = { ...testKafkaConfig('bus-outage'), brokers: broker.brokers };
    const campaignId = `campaign-${randomUUID()}`;
    const bus = testBus(config);
    try {
      const received = new Inbox<number>();
      await bus.subscribe(
        Topics.runLifecycle,
        { group: config.group('analyzer'), fromBeginning: true },
        (event) => {
          if (event.campaignId === campaignId) received.push(event.counts.sent);
        },
      );
      const publishRange = (from: number, to: number) =>
        bus.publishMany(
          Topics.runLifecycle,
          Array.from({ length: to - from }, (_, i) => lifecycleEvent(campaignId, `run-${i % 5}`, from + i)),
        );
      await publishRange(0, 50);
      await received.until((items) => new Set(items).size === 50, 'the events before the outage');

      await broker.down();
      const outageStarted = Date.now();
      const publishedDuringOutage = publishRange(50, 100).then(() => Date.now() - outageStarted);
      await new Promise((wake) => setTimeout(wake, 1500));
      await broker.up();
      // The publish waited out the outage (kafkajs retries) instead of failing or losing events.
      expect(await publishedDuringOutage).toBeGreaterThanOrEqual(1500);
      await publishRange(100, 150);

      await received.until((items) => new Set(items).size === 150, 'every event across the outage', 30_000);
      expect([...new Set(received.items)].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 150 }, (_, i) => i),
      );
    } finally {
      await bus.close();
      await broker.stop();
    }
  });
});
