import type { Bus } from './bus';
import type { BusLogger } from './bus-logger';
import { InMemoryBus } from './in-memory.transport';
import { KafkaBus, type KafkaBusOptions } from './kafka.transport';

export type BusConfig =
  | { readonly kind: 'memory' }
  | ({ readonly kind: 'kafka' } & Pick<KafkaBusOptions, 'brokers' | 'clientId'> & Partial<KafkaBusOptions>);

/** Builds the bus a config asks for. */
export function createBus(config: BusConfig, logger?: BusLogger): Bus {
  switch (config.kind) {
    case 'memory':
      return new InMemoryBus({ logger });
    case 'kafka': {
      const { kind: _kind, ...options } = config;
      return new KafkaBus({ logger, ...options });
    }
  }
}

/**
 * Reads the bus from the environment: `FATHOM_BUS=memory|kafka` (default memory), and for Kafka
 * `KAFKA_BROKERS` (comma-separated host:port, required) and `KAFKA_CLIENT_ID` (default `fathom`).
 * Throws with the variable's name when a value is wrong, so a service fails at boot.
 */
export function busConfigFromEnv(env: NodeJS.ProcessEnv, defaultClientId = 'fathom'): BusConfig {
  const kind = (env.FATHOM_BUS ?? 'memory').trim();
  if (kind === 'memory') return { kind: 'memory' };
  if (kind !== 'kafka') throw new Error(`FATHOM_BUS must be "memory" or "kafka", got "${kind}"`);
  const brokers = (env.KAFKA_BROKERS ?? '')
    .split(',')
    .map((address) => address.trim())
    .filter((address) => address.length > 0);
  if (brokers.length === 0)
    throw new Error('KAFKA_BROKERS must list at least one host:port when FATHOM_BUS=kafka');
  const malformed = brokers.find((address) => !/^[^\s:]+:\d{1,5}$/.test(address));
  if (malformed) throw new Error(`KAFKA_BROKERS entry "${malformed}" is not host:port`);
  const clientId = env.KAFKA_CLIENT_ID?.trim() || defaultClientId;
  return { kind: 'kafka', brokers, clientId };
}
