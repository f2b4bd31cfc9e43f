export * from './broker/kafka-broker.harness';
export * from './broker/test-kafka.config';
export * from './wait-for.util';
export * from './process.util';
export * from './postgres-test.util';
export * from './fuzz.util';
export * from './otlp-receiver';
