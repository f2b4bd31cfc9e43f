import { busConfigFromEnv, createBus } from './bus.factory';
import { InMemoryBus } from './in-memory.transport';
import { KafkaBus } from './kafka.transport';
import { recordingBusLogger } from './bus.contract-suite';

describe(busConfigFromEnv.name, () => {
  it('defaults to the in-memory bus', () => {
    expect(busConfigFromEnv({})).toEqual({ kind: 'memory' });
  });

  it('reads the Kafka brokers and client id', () => {
    expect(
      busConfigFromEnv({
        FATHOM_BUS: 'kafka',
        KAFKA_BROKERS: ' kafka-1:9092, kafka-2:9092,',
        KAFKA_CLIENT_ID: 'analyzer',
      }),
    ).toEqual({ kind: 'kafka', brokers: ['kafka-1:9092', 'kafka-2:9092'], clientId: 'analyzer' });
  });

  it('uses the default client id when none is set', () => {
    expect(
      busConfigFromEnv({ FATHOM_BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9092' }, 'orchestrator'),
    ).toMatchObject({
      clientId: 'orchestrator',
    });
  });

  it('reads the consumer timings', () => {
    expect(
      busConfigFromEnv({
        FATHOM_BUS: 'kafka',
        KAFKA_BROKERS: '127.0.0.1:9092',
        KAFKA_SESSION_TIMEOUT_MS: '3000',
        KAFKA_MAX_WAIT_MS: '200',
      }),
    ).toMatchObject({ consumer: { sessionTimeout: 3000, maxWaitTimeInMs: 200 } });
  });

  it.each([
    [
      { FATHOM_BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9092', KAFKA_SESSION_TIMEOUT_MS: '3s' },
      /KAFKA_SESSION_TIMEOUT_MS/,
    ],
    [{ FATHOM_BUS: 'rabbit' }, /FATHOM_BUS/],
    [{ FATHOM_BUS: 'kafka' }, /KAFKA_BROKERS/],
    [{ FATHOM_BUS: 'kafka', KAFKA_BROKERS: 'kafka-1' }, /"kafka-1" is not host:port/],
  ])('names the variable that is wrong in %j', (env, message) => {
    expect(() => busConfigFromEnv(env)).toThrow(message);
  });
});

describe(createBus.name, () => {
  it('builds the transport the config names', async () => {
    const memory = createBus({ kind: 'memory' });
    const kafka = createBus(
      { kind: 'kafka', brokers: ['127.0.0.1:1'], clientId: 'factory-test' },
      recordingBusLogger(),
    );
    expect(memory).toBeInstanceOf(InMemoryBus);
    expect(kafka).toBeInstanceOf(KafkaBus);
    await Promise.all([memory.close(), kafka.close()]);
  });
});
