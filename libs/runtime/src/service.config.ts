import { z } from 'zod';
import { EdgeSamplingSettingsShape } from '@fathom/observability';

/**
 * The process's own settings (where to listen, which bus and database), validated once at boot.
 * Each service's settings are its own schema (`<service>.settings.ts`), validated by
 * `createFathomApp` from the same environment.
 */
export const ServiceEnvSchema = z.object({
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).optional(),
  FATHOM_BUS: z.enum(['memory', 'kafka']).optional(),
  KAFKA_BROKERS: z.string().optional(),
  DATABASE_URL: z.string().optional(),
  FATHOM_DATA_DIR: z.string().optional(),
  /** Edge sampling of the process's own exported spans (libs/observability edge-sampling). */
  ...EdgeSamplingSettingsShape,
});
export type ServiceEnv = z.infer<typeof ServiceEnvSchema>;

export function parseServiceEnv(env: NodeJS.ProcessEnv): ServiceEnv {
  const parsed = ServiceEnvSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid environment: ${issues}`);
  }
  return parsed.data;
}

/** Default HTTP port of each service when run alone (the embedded process uses the orchestrator's). */
export const DEFAULT_PORTS = {
  orchestrator: 7070,
  'load-generator': 7071,
  'semantic-monitor': 7072,
  'gpu-collector': 7073,
  analyzer: 7074,
} as const;
