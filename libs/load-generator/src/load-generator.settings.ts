import { availableParallelism, hostname } from 'node:os';
import { z } from 'zod';
import { parseSettings } from '@fathom/contracts';
import { secretEnvOf } from '@fathom/load';
import { EdgeSamplingSettingsShape } from '@fathom/observability';

/** The load-generator's settings, validated once at boot by libs/runtime and injected. */
export const LoadGeneratorSettingsSchema = z.object({
  /** Identity of this load-generator in telemetry (defaults to host:pid). */
  FATHOM_GENERATOR_ID: z
    .string()
    .min(1)
    .default(() => `${hostname()}:${process.pid}`),
  /**
   * Where a shard's load engine runs. `worker` (default): its own worker thread, so bus I/O,
   * encoding and the other services of an embedded process never stall the engine's socket
   * reads; `inline`: on the service's event loop.
   */
  FATHOM_ENGINE_THREAD: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.enum(['worker', 'inline']).default('worker'),
  ),
  /** Shards run at once; the rest wait their turn. Default: twice the cores, at least 8. */
  FATHOM_MAX_ACTIVE_SHARDS: z.coerce
    .number()
    .int()
    .positive()
    .default(() => Math.max(8, availableParallelism() * 2)),
  /** Where `{ file }` secret references are read; unset: refused. */
  FATHOM_SECRETS_DIR: z.string().min(1).optional(),
  /** OTLP/HTTP collector: GenAI client metrics and a span per sampled request go there when set. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess((v) => (v === '' ? undefined : v), z.string().url().optional()),
  /** Edge sampling of those spans: CPU and free-memory thresholds (spec: 75 %, 128 MB), or off. */
  ...EdgeSamplingSettingsShape,
});
export type LoadGeneratorSettings = z.infer<typeof LoadGeneratorSettingsSchema> & {
  /** FATHOM_SECRET_* variables, the values `{ env }` secret references name. */
  readonly secretEnv?: Readonly<Record<string, string>>;
};
export const LOAD_GENERATOR_SETTINGS = Symbol('LOAD_GENERATOR_SETTINGS');

export function parseLoadGeneratorSettings(
  env: Readonly<Record<string, string | undefined>>,
): LoadGeneratorSettings {
  return {
    ...parseSettings(LoadGeneratorSettingsSchema, env, 'load-generator'),
    secretEnv: secretEnvOf(env),
  };
}
