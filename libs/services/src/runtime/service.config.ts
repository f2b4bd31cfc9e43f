import { z } from 'zod';

/**
 * Process configuration, validated once at boot: a bad value stops the process with a message
 * that names the variable, instead of surfacing as a strange failure later.
 */
export const ServiceEnvSchema = z.object({
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).optional(),
  FATHOM_BUS: z.enum(['memory', 'kafka']).optional(),
  KAFKA_BROKERS: z.string().optional(),
  DATABASE_URL: z.string().optional(),
  FATHOM_DATA_DIR: z.string().optional(),
  /** Bearer token that mutating REST calls must carry; unset = open (embedded, loopback only). */
  FATHOM_API_TOKEN: z.string().min(8).optional(),
  /** Identity of this load-generator in telemetry (defaults to host:pid). */
  FATHOM_GENERATOR_ID: z.string().optional(),
  /** Scrape interval of the gpu-collector, ms. */
  FATHOM_GPU_SCRAPE_MS: z.coerce.number().int().positive().default(1000),
  /** How long the analyzer waits for a finished run's trailing telemetry before reporting, ms. */
  FATHOM_ANALYZER_SETTLE_MS: z.coerce.number().int().positive().default(15000),
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
