import { testKafkaConfig } from '@fathom/testing';
import { describeBusContract, recordingBusLogger } from './bus.contract-suite';
import { KafkaBus } from './kafka.transport';

/** A Kafka bus on the run's shared test broker (jest global setup), quiet, fast retries. */
function testBus(config = testKafkaConfig('bus')): KafkaBus {
  return new KafkaBus({ ...config, logger: recordingBusLogger(), retryBackoffMs: () => 20 });
}

describeBusContract(KafkaBus.name, () => {
  const config = testKafkaConfig('bus.contract-suite');
  const buses = [testBus(config)];
  return {
    bus: buses[0],
    member: () => {
      const bus = testBus(config);
      buses.push(bus);
      return bus;
    },
    group: config.group,
    close: async () => {
      await Promise.all(buses.map((bus) => bus.close()));
    },
  };
});
