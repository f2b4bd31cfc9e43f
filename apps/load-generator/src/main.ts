import 'reflect-metadata';
import { runServiceFromEnv } from '@fathom/runtime';

// The load-generator service alone, over Kafka (FATHOM_BUS=kafka, KAFKA_BROKERS) and PostgreSQL
// (DATABASE_URL) where it needs one. `fathom up` runs all five in one process instead.
runServiceFromEnv('load-generator').catch((error: unknown) => {
  process.stderr.write(`load-generator: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
