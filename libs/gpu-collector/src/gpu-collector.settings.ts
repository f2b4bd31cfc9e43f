import { z } from 'zod';
import { parseSettings } from '@fathom/contracts';

/** The gpu-collector's settings, validated once at boot by libs/runtime and injected. */
export const GpuCollectorSettingsSchema = z.object({
  /** Scrape interval, ms. */
  FATHOM_GPU_SCRAPE_MS: z.coerce.number().int().positive().default(1000),
  /** `1`: also run the local `nvidia-smi` each scrape (a GPU host without DCGM). */
  FATHOM_GPU_LOCAL_NVIDIA_SMI: z.enum(['0', '1']).default('0'),
});
export type GpuCollectorSettings = z.infer<typeof GpuCollectorSettingsSchema>;
export const GPU_COLLECTOR_SETTINGS = Symbol('GPU_COLLECTOR_SETTINGS');

export function parseGpuCollectorSettings(
  env: Readonly<Record<string, string | undefined>>,
): GpuCollectorSettings {
  return parseSettings(GpuCollectorSettingsSchema, env, 'gpu-collector');
}
