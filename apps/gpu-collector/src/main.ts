import 'reflect-metadata';
import { runServiceFromEnv } from '@fathom/runtime';

// The gpu-collector service alone, over Kafka (FATHOM_BUS=kafka, KAFKA_BROKERS) and PostgreSQL
// (DATABASE_URL) where it needs one. `fathom up` runs all five in one process instead.
runServiceFromEnv('gpu-collector').catch((error: unknown) => {
  process.stderr.write(`gpu-collector: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
