// Stops the broker that jest.global-setup.js started (globals set there are visible here).
module.exports = async () => {
  const broker = globalThis.__FATHOM_TEST_KAFKA__;
  if (broker) {
    globalThis.__FATHOM_TEST_KAFKA__ = undefined;
    await broker.stop();
  }
};
