import { z } from 'zod';

/**
 * The orchestrator's own settings, read once when its module is built; a bad value stops the
 * process with a message naming the variable.
 */
export const OrchestratorEnvSchema = z.object({
  /** Shared secret Alertmanager presents as `Authorization: Bearer <secret>`; unset = webhook refused (503). */
  FATHOM_ALERT_WEBHOOK_SECRET: z.string().min(8).optional(),
  /**
   * A pending or running run with no report this long after its planned end (start + duration)
   * is marked failed: its load-generator or orchestrator died with it. Covers the analyzer's
   * settle time (FATHOM_ANALYZER_SETTLE_MS, 15 s by default) with room to spare.
   */
  FATHOM_RUN_GRACE_MS: z.coerce.number().int().positive().default(120_000),
  /** How often open runs are reconciled with stored reports and deadlines, ms. */
  FATHOM_RECONCILE_INTERVAL_MS: z.coerce.number().int().positive().default(5_000),
  /** How often due schedules are looked at, ms. */
  FATHOM_SCHEDULER_TICK_MS: z.coerce.number().int().positive().default(1_000),
  /** First rerun backoff of a campaign, doubled for each rerun it already had, ms. */
  FATHOM_RERUN_BACKOFF_MS: z.coerce.number().int().min(0).default(5_000),
  /** Backoff ceiling, ms. */
  FATHOM_RERUN_BACKOFF_MAX_MS: z.coerce.number().int().min(0).default(600_000),
});
export type OrchestratorConfig = z.infer<typeof OrchestratorEnvSchema>;

export const ORCHESTRATOR_CONFIG = Symbol('ORCHESTRATOR_CONFIG');

export function parseOrchestratorEnv(env: NodeJS.ProcessEnv): OrchestratorConfig {
  const parsed = OrchestratorEnvSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid orchestrator environment: ${issues}`);
  }
  return parsed.data;
}
