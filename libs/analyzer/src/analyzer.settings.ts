import { z } from 'zod';
import { parseSettings } from '@fathom/contracts';

/** The analyzer's settings, validated once at boot by libs/runtime and injected. */
export const AnalyzerSettingsSchema = z.object({
  /** How long the analyzer waits for a finished run's trailing telemetry before reporting, ms. */
  FATHOM_ANALYZER_SETTLE_MS: z.coerce.number().int().positive().default(15000),
});
export type AnalyzerSettings = z.infer<typeof AnalyzerSettingsSchema>;
export const ANALYZER_SETTINGS = Symbol('ANALYZER_SETTINGS');

export function parseAnalyzerSettings(env: Readonly<Record<string, string | undefined>>): AnalyzerSettings {
  return parseSettings(AnalyzerSettingsSchema, env, 'analyzer');
}
