import { hostname } from 'node:os';
import { z } from 'zod';
import { parseSettings } from '@fathom/contracts';

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
});
export type LoadGeneratorSettings = z.infer<typeof LoadGeneratorSettingsSchema>;
export const LOAD_GENERATOR_SETTINGS = Symbol('LOAD_GENERATOR_SETTINGS');

export function parseLoadGeneratorSettings(
  env: Readonly<Record<string, string | undefined>>,
): LoadGeneratorSettings {
  return parseSettings(LoadGeneratorSettingsSchema, env, 'load-generator');
}
