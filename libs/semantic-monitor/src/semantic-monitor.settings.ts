import { z } from 'zod';
import { parseSettings } from '@fathom/contracts';
import { DEFAULT_MIN_SAMPLE_RATE } from './embedding-sample.config';

/** The semantic-monitor's settings, validated once at boot by libs/runtime and injected. */
export const SemanticMonitorSettingsSchema = z.object({
  /** After the last shard ends, how long to wait for its records before publishing goodput anyway, ms. */
  FATHOM_SEMANTIC_SETTLE_MS: z.coerce.number().int().positive().default(10_000),
  /** Embedding model of the drift and RAG checks: `use-lite` (ships with npm) or `off`. */
  FATHOM_SEMANTIC_EMBEDDER: z.enum(['use-lite', 'off']).default('use-lite'),
  /**
   * The LLM monitor's anomaly model: `bundled` (the head that ships, trained on generated
   * fragments), a path to a retrained `.onnx` with the same contract, or `off` (rules only).
   * A model that fails to load leaves the monitor on rules only, and it says so (monitor-fault).
   */
  FATHOM_LLM_MONITOR_MODEL: z.string().trim().min(1).default('bundled'),
  /**
   * The share of responses embedded however busy the host is (0 < x <= 1; default 1 %). The
   * adaptive rate backs off to it under CPU pressure and starts there when it is above the usual
   * 10 %. Raise it where baseline comparisons (`semantic.baseline`) must reach their `minPairs` on
   * a saturated machine: each embedding costs tens of ms of CPU (USE lite).
   */
  FATHOM_SEMANTIC_MIN_SAMPLE_RATE: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z.coerce.number().gt(0).max(1).default(DEFAULT_MIN_SAMPLE_RATE),
  ),
});
export type SemanticMonitorSettings = z.infer<typeof SemanticMonitorSettingsSchema>;
export const SEMANTIC_MONITOR_SETTINGS = Symbol('SEMANTIC_MONITOR_SETTINGS');

export function parseSemanticMonitorSettings(
  env: Readonly<Record<string, string | undefined>>,
): SemanticMonitorSettings {
  return parseSettings(SemanticMonitorSettingsSchema, env, 'semantic-monitor');
}
