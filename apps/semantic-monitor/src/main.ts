import 'reflect-metadata';
import { runServiceFromEnv } from '@fathom/runtime';

// The semantic-monitor service alone, over Kafka (FATHOM_BUS=kafka, KAFKA_BROKERS) and PostgreSQL
// (DATABASE_URL) where it needs one. `fathom up` runs all five in one process instead.
runServiceFromEnv('semantic-monitor').catch((error: unknown) => {
  process.stderr.write(`semantic-monitor: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
