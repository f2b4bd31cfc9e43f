import { z } from 'zod';
import { parseSettings } from '@fathom/contracts';

/** The analyzer's settings, validated once at boot by libs/runtime and injected. */
export const AnalyzerSettingsSchema = z.object({
  /** How long the analyzer waits for a finished run's trailing telemetry before reporting, ms. */
  FATHOM_ANALYZER_SETTLE_MS: z.coerce.number().int().positive().default(15000),
  /**
   * How long a run whose shard never ended may go without a window or lifecycle event before it is
   * reported `partial` (its generator died or was cut off), ms. Below the orchestrator's
   * FATHOM_RUN_GRACE_MS (120 s), which fails a run that has no report by then; above the time a
   * loaded generator takes from its last window to its shard's end (over 45 s measured after a
   * 9-minute 48-stream run on 2 busy cores).
   */
  FATHOM_ANALYZER_SHARD_SILENCE_MS: z.coerce.number().int().positive().default(90_000),
});
export type AnalyzerSettings = z.infer<typeof AnalyzerSettingsSchema>;
export const ANALYZER_SETTINGS = Symbol('ANALYZER_SETTINGS');

export function parseAnalyzerSettings(env: Readonly<Record<string, string | undefined>>): AnalyzerSettings {
  return parseSettings(AnalyzerSettingsSchema, env, 'analyzer');
}
