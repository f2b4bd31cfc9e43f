import { Logger } from '@nestjs/common';
import { createBus, busConfigFromEnv } from '@fathom/bus';
import { openDatabase, databaseConfigFromEnv, type Database } from '@fathom/storage';
import { edgeSamplingOptions, startTracing, stopTracing } from '@fathom/observability';
import { createFathomApp } from './fathom-app';
import { DEFAULT_PORTS, parseServiceEnv } from './service.config';
import type { ServiceName } from '@fathom/contracts';

/**
 * Entry point of a service process (`apps/<service>/src/main.ts`): validates the environment,
 * starts tracing, connects the bus (Kafka when FATHOM_BUS=kafka) and the database (PostgreSQL
 * when DATABASE_URL is set) and serves /health and /metrics. Stops cleanly on SIGTERM/SIGINT.
 */
export async function runServiceFromEnv(
  service: ServiceName,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const logger = new Logger(service);
  const config = parseServiceEnv(env);
  startTracing(`fathom-${service}`, env, edgeSamplingOptions(config));
  const bus = await createBus(busConfigFromEnv(env));
  let database: Database | undefined;
  // The semantic-monitor stores baseline runs (campaign `semantic.baseline`) in the shared
  // PostgreSQL when it is given one; a private embedded database would not see the campaigns.
  if (
    service === 'orchestrator' ||
    service === 'analyzer' ||
    (service === 'semantic-monitor' && env.DATABASE_URL)
  ) {
    database = await openDatabase(databaseConfigFromEnv(env));
  }
  const app = await createFathomApp({
    services: [service],
    bus,
    database,
    host: config.HOST,
    port: config.PORT ?? DEFAULT_PORTS[service],
  });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: stopping`);
    await app.close();
    await bus.close();
    await database?.close();
    await stopTracing();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}
