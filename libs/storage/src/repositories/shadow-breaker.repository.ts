import { shadowRunId, type BreakerState } from '@fathom/contracts';
import type { Queryable, Row } from '../database/database';
import { epochMs, epochMsOrNull, jsonParam, textParam, timestampParam } from './row.util';

/** One judged outcome (for a shadow candidate: one window), at its event time (ms). */
export interface StoredBreakerOutcome {
  readonly at: number;
  readonly ok: boolean;
  readonly slow: boolean;
}

/**
 * The analyzer's breaker on a live shadow campaign's candidate as it stood after the last window
 * it judged (migration 9). Times are epoch milliseconds; `since` and `openedAt` are 0 while the
 * breaker never moved or never opened.
 */
export interface StoredShadowBreaker {
  readonly runId: string;
  readonly key: { readonly target: string; readonly layer: string; readonly node: string };
  readonly state: BreakerState;
  /** Event time of its last transition. */
  readonly since: number;
  readonly openedAt: number;
  /** The windows it still judges: closed, its sliding window; half-open, the probes so far. */
  readonly outcomes: readonly StoredBreakerOutcome[];
  readonly probes: readonly StoredBreakerOutcome[];
  readonly paths: readonly string[];
  /** Event time of the last window judged (its signal's `emittedAt`). */
  readonly judgedUntil: number;
  readonly lastSignalId: string;
}

const COLUMNS =
  'run_id, target, layer, node, state, since, opened_at, outcomes, probes, paths, judged_until, last_signal_id';

/** What `shadowRunId` puts before the campaign id. */
const SHADOW_RUN_PREFIX = shadowRunId('');

export class ShadowBreakerRepository {
  constructor(private readonly db: Queryable) {}

  async get(runId: string, key: StoredShadowBreaker['key']): Promise<StoredShadowBreaker | null> {
    const [row] = await this.db.query(
      `SELECT ${COLUMNS} FROM shadow_breakers WHERE run_id = $1 AND target = $2 AND layer = $3 AND node = $4`,
      [runId, key.target, key.layer, key.node],
    );
    return row ? toBreaker(row) : null;
  }

  /**
   * Stores the breaker unless one judged up to a later window is stored (an analyzer that lost
   * the campaign's partition finishing a window late), or its shadow campaign (run id
   * `shadowRunId(campaign)`) has ended: its rows went when it ended (ShadowRepository.finish),
   * and the last window's signal, judged after that, must not bring one back. True when written.
   */
  async save(breaker: StoredShadowBreaker): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO shadow_breakers (${COLUMNS})
       SELECT $1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz, $8::jsonb, $9::jsonb, $10::jsonb,
              $11::timestamptz, $12
        WHERE NOT EXISTS (SELECT 1 FROM shadow_campaigns WHERE id = $13 AND status <> 'running')
       ON CONFLICT (run_id, target, layer, node) DO UPDATE SET
         state = EXCLUDED.state, since = EXCLUDED.since, opened_at = EXCLUDED.opened_at,
         outcomes = EXCLUDED.outcomes, probes = EXCLUDED.probes, paths = EXCLUDED.paths,
         judged_until = EXCLUDED.judged_until, last_signal_id = EXCLUDED.last_signal_id, updated_at = now()
       WHERE shadow_breakers.judged_until < EXCLUDED.judged_until
       RETURNING 1`,
      [
        breaker.runId,
        breaker.key.target,
        breaker.key.layer,
        breaker.key.node,
        breaker.state,
        breaker.since > 0 ? timestampParam(breaker.since) : null,
        breaker.openedAt > 0 ? timestampParam(breaker.openedAt) : null,
        jsonParam(breaker.outcomes),
        jsonParam(breaker.probes),
        jsonParam(breaker.paths),
        timestampParam(breaker.judgedUntil),
        textParam(breaker.lastSignalId),
        breaker.runId.startsWith(SHADOW_RUN_PREFIX) ? breaker.runId.slice(SHADOW_RUN_PREFIX.length) : null,
      ],
    );
    return rows.length > 0;
  }
}

function toBreaker(row: Row): StoredShadowBreaker {
  return {
    runId: String(row.run_id),
    key: { target: String(row.target), layer: String(row.layer), node: String(row.node) },
    state: row.state as BreakerState,
    since: epochMsOrNull(row.since) ?? 0,
    openedAt: epochMsOrNull(row.opened_at) ?? 0,
    outcomes: row.outcomes as StoredBreakerOutcome[],
    probes: row.probes as StoredBreakerOutcome[],
    paths: row.paths as string[],
    judgedUntil: epochMs(row.judged_until),
    lastSignalId: String(row.last_signal_id),
  };
}
