// Starts one Kafka-protocol test broker (librdkafka's mock cluster) for the whole jest run and
// exports its address to the workers. It starts in milliseconds once compiled, so it always
// starts. Where it cannot (no gcc or librdkafka-dev), unit tests still run; Kafka tests fail
// with the reason through testKafkaConfig().
// jest transpiles modules required from here with the workspace's swc transform.
const { startKafkaBroker } = require('./broker/kafka-broker.harness.ts');
const { TEST_KAFKA_BROKERS_ENV, TEST_KAFKA_ERROR_ENV } = require('./broker/test-kafka.config.ts');

module.exports = async () => {
  if (process.env[TEST_KAFKA_BROKERS_ENV]) return; // an outer harness (CI, e2e) provided one
  try {
    const broker = await startKafkaBroker({ partitions: 3 });
    globalThis.__FATHOM_TEST_KAFKA__ = broker;
    process.env[TEST_KAFKA_BROKERS_ENV] = broker.brokers.join(',');
  } catch (error) {
    process.env[TEST_KAFKA_ERROR_ENV] = error instanceof Error ? error.message : String(error);
  }
};
