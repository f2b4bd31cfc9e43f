// Placeholder-free global setup: the Kafka-protocol broker is started by the harness in
// ./broker (see kafka-broker.harness.ts) when a test asks for it.
module.exports = async () => {};
