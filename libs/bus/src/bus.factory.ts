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
 * `KAFKA_BROKERS` (comma-separated host:port, required), `KAFKA_CLIENT_ID` (default `fathom`) and the
 * consumer timings `KAFKA_SESSION_TIMEOUT_MS`, `KAFKA_HEARTBEAT_INTERVAL_MS`, `KAFKA_MAX_WAIT_MS`.
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
  const consumer = {
    sessionTimeout: positiveInt(env, 'KAFKA_SESSION_TIMEOUT_MS'),
    heartbeatInterval: positiveInt(env, 'KAFKA_HEARTBEAT_INTERVAL_MS'),
    maxWaitTimeInMs: positiveInt(env, 'KAFKA_MAX_WAIT_MS'),
  };
  const tuned = Object.fromEntries(Object.entries(consumer).filter(([, v]) => v !== undefined));
  return { kind: 'kafka', brokers, clientId, ...(Object.keys(tuned).length ? { consumer: tuned } : {}) };
}

/**
 * Consumer timings (kafkajs defaults otherwise). A shorter session timeout makes a group notice a
 * dead member sooner: with the defaults a restarted consumer waits ~30 s for its partitions.
 */
function positiveInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0)
    throw new Error(`${name} must be a positive integer (ms), got "${raw}"`);
  return value;
}
