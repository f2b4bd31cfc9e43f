import { z } from 'zod';
import { parseSettings } from '@fathom/contracts';
import { secretEnvOf, TargetAllowList } from '@fathom/load';

/** The orchestrator's settings, validated once at boot by libs/runtime and injected. */
export const OrchestratorSettingsSchema = z.object({
  /** Bearer token that REST calls must carry; unset = open (embedded, loopback only). */
  FATHOM_API_TOKEN: z.string().min(8).optional(),
  /** Shared secret Alertmanager presents as `Authorization: Bearer <secret>`; unset = webhook refused (503). */
  FATHOM_ALERT_WEBHOOK_SECRET: z.string().min(8).optional(),
  /**
   * A pending or running run with no report this long after its planned end (start + duration)
   * is marked failed: its load-generator or orchestrator died with it. Covers the analyzer's
   * settle time (FATHOM_ANALYZER_SETTLE_MS, 15 s by default) with room to spare.
   */
  FATHOM_RUN_GRACE_MS: z.coerce.number().int().positive().default(120_000),
  /**
   * A run whose plan went to the load-generators but that none started is failed this long after
   * the plan went out: generators at their shard cap (FATHOM_MAX_ACTIVE_SHARDS) queue shards, and
   * a burst of runs waits there for its turn.
   */
  FATHOM_RUN_START_GRACE_MS: z.coerce.number().int().positive().default(600_000),
  /** How often open runs are reconciled with stored reports and deadlines, ms. */
  FATHOM_RECONCILE_INTERVAL_MS: z.coerce.number().int().positive().default(5_000),
  /** How often due schedules are looked at, ms. */
  FATHOM_SCHEDULER_TICK_MS: z.coerce.number().int().positive().default(1_000),
  /** First rerun backoff of a campaign, doubled for each rerun it already had, ms. */
  FATHOM_RERUN_BACKOFF_MS: z.coerce.number().int().min(0).default(5_000),
  /** Backoff ceiling, ms. */
  FATHOM_RERUN_BACKOFF_MAX_MS: z.coerce.number().int().min(0).default(600_000),
  /** The only directory dataset, replay and shadow source files are read from over the API; unset: none. */
  FATHOM_DATA_FILES_DIR: z.string().min(1).optional(),
  /** Hosts, host:port pairs and CIDRs requests may go to (see TargetAllowList); unset: all but link-local/metadata. */
  FATHOM_ALLOWED_TARGETS: z
    .string()
    .optional()
    .superRefine((text, ctx) => {
      try {
        TargetAllowList.parse(text);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    }),
  /** Where `{ file }` secret references of shadow targets are read; unset: refused. */
  FATHOM_SECRETS_DIR: z.string().min(1).optional(),
  /**
   * How long an orchestrator holds a running shadow campaign without renewing it, ms: a replica
   * that died leaves its campaigns to the others after at most this plus FATHOM_SHADOW_LEASE_RENEW_MS.
   */
  FATHOM_SHADOW_LEASE_MS: z.coerce.number().int().positive().default(30_000),
  /**
   * How often an orchestrator renews its shadow campaigns' leases and takes over expired ones,
   * ms; well under FATHOM_SHADOW_LEASE_MS (a third leaves two renewals' slack).
   */
  FATHOM_SHADOW_LEASE_RENEW_MS: z.coerce.number().int().positive().default(10_000),
});
export type OrchestratorSettings = z.infer<typeof OrchestratorSettingsSchema> & {
  /** FATHOM_SECRET_* variables, the values `{ env }` secret references of shadow targets name. */
  readonly secretEnv?: Readonly<Record<string, string>>;
};

export const ORCHESTRATOR_SETTINGS = Symbol('ORCHESTRATOR_SETTINGS');

export function parseOrchestratorSettings(
  env: Readonly<Record<string, string | undefined>>,
): OrchestratorSettings {
  const settings = parseSettings(OrchestratorSettingsSchema, env, 'orchestrator');
  if (settings.FATHOM_SHADOW_LEASE_RENEW_MS >= settings.FATHOM_SHADOW_LEASE_MS)
    throw new Error(
      'invalid orchestrator settings: FATHOM_SHADOW_LEASE_RENEW_MS must be less than FATHOM_SHADOW_LEASE_MS',
    );
  return { ...settings, secretEnv: secretEnvOf(env) };
}
