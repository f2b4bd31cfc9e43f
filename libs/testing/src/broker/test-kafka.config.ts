import { randomUUID } from 'node:crypto';

/** Environment variables the jest global setup exports to every test worker. */
export const TEST_KAFKA_BROKERS_ENV = 'FATHOM_TEST_KAFKA_BROKERS';
export const TEST_KAFKA_ERROR_ENV = 'FATHOM_TEST_KAFKA_ERROR';

/** Structurally a `KafkaBusOptions` of @fathom/bus (the testing lib does not depend on the bus). */
export interface TestKafkaConfig {
  readonly brokers: string[];
  readonly clientId: string;
  readonly consumer: { sessionTimeout: number; heartbeatInterval: number; maxWaitTimeInMs: number };
  readonly logLevel: 'error';
  /** A consumer group id unique to this config, e.g. `group('analyzer')`. */
  group(name: string): string;
}

/**
 * Settings for a Kafka client against the run's shared test broker. Consumer timings are short
 * because with kafkajs defaults a rebalance after a restart takes ~29 s on the mock cluster.
 */
export function testKafkaConfig(prefix: string, env: NodeJS.ProcessEnv = process.env): TestKafkaConfig {
  const list = env[TEST_KAFKA_BROKERS_ENV];
  if (!list) {
    const why =
      env[TEST_KAFKA_ERROR_ENV] ?? `${TEST_KAFKA_BROKERS_ENV} is not set (is jest's global setup in use?)`;
    throw new Error(`no Kafka test broker: ${why}`);
  }
  const unique = `${prefix}-${randomUUID().slice(0, 8)}`;
  return {
    brokers: list.split(',').filter((address) => address.length > 0),
    clientId: unique,
    consumer: { sessionTimeout: 3000, heartbeatInterval: 300, maxWaitTimeInMs: 200 },
    logLevel: 'error',
    group: (name) => `${unique}-${name}`,
  };
}
