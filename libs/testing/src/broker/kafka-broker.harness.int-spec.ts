import { Kafka, logLevel } from 'kafkajs';
import { ALL_TOPIC_NAMES } from '@fathom/contracts';
import { startKafkaBroker } from './kafka-broker.harness';
import { TEST_KAFKA_BROKERS_ENV, testKafkaConfig } from './test-kafka.config';

describe(startKafkaBroker.name, () => {
  it('starts a broker with every registry topic and the extra ones, and stops it', async () => {
    const sut = await startKafkaBroker({ partitions: 2, topics: ['fathom.test.extra.v1'] });
    const kafka = new Kafka({ clientId: 'harness-test', brokers: sut.brokers, logLevel: logLevel.NOTHING });
    try {
      const admin = kafka.admin();
      await admin.connect();
      const metadata = await admin.fetchTopicMetadata({
        topics: [...ALL_TOPIC_NAMES, 'fathom.test.extra.v1'],
      });
      await admin.disconnect();
      expect(metadata.topics).toHaveLength(ALL_TOPIC_NAMES.length + 1);
      for (const topic of metadata.topics) expect(topic.partitions).toHaveLength(2);
    } finally {
      await sut.stop();
    }
    const [host, port] = sut.brokers[0].split(':');
    const probe = new Kafka({
      clientId: 'harness-probe',
      brokers: [`${host}:${port}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    });
    const admin = probe.admin();
    await expect(admin.connect()).rejects.toThrow();
  });
});

describe(testKafkaConfig.name, () => {
  it('gives the shared broker with unique client and group ids and fast consumer timings', () => {
    const env = { [TEST_KAFKA_BROKERS_ENV]: '127.0.0.1:1111,127.0.0.1:2222' };
    const first = testKafkaConfig('analyzer', env);
    const second = testKafkaConfig('analyzer', env);
    expect(first.brokers).toEqual(['127.0.0.1:1111', '127.0.0.1:2222']);
    expect(first.clientId).not.toBe(second.clientId);
    expect(first.group('g')).not.toBe(second.group('g'));
    expect(first.consumer).toEqual({ sessionTimeout: 3000, heartbeatInterval: 300, maxWaitTimeInMs: 200 });
  });

  it('says why there is no broker', () => {
    expect(() => testKafkaConfig('x', { FATHOM_TEST_KAFKA_ERROR: 'install librdkafka-dev' })).toThrow(
      'no Kafka test broker: install librdkafka-dev',
    );
  });
});

describe('a started Kafka test broker', () => {
  it('refuses connections while down and accepts them again once up', async () => {
    const sut = await startKafkaBroker();
    const connect = async (): Promise<void> => {
      const kafka = new Kafka({
        clientId: 'outage-probe',
        brokers: sut.brokers,
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
        connectionTimeout: 500,
      });
      const admin = kafka.admin();
      await admin.connect();
      await admin.disconnect();
    };
    try {
      await sut.down();
      await expect(connect()).rejects.toThrow();
      await sut.up();
      await expect(connect()).resolves.toBeUndefined();
    } finally {
      await sut.stop();
    }
  });
});
