import 'reflect-metadata';
import { runServiceFromEnv } from '@fathom/runtime';

// The orchestrator service alone, over Kafka (FATHOM_BUS=kafka, KAFKA_BROKERS) and PostgreSQL
// (DATABASE_URL) where it needs one. `fathom up` runs all five in one process instead.
runServiceFromEnv('orchestrator').catch((error: unknown) => {
  process.stderr.write(`orchestrator: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
