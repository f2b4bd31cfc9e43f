import { fromJsonb } from './jsonb-text.util';
import type { JsonValue, Queryable, Row } from '../database/database';
import { epochMs, jsonParam, newId, timestampParam } from './row.util';

/** Reference figures of a campaign that later runs are compared with. */
export type StoredBaseline = {
  id: string;
  campaignId: string;
  name: string;
  /** The run it was recorded from; null for a baseline not taken from one run. */
  runId: string | null;
  /** Epoch milliseconds. */
  createdAt: number;
  data: JsonValue;
};

export type NewBaseline = {
  /** Default: a random UUID. */
  id?: string;
  campaignId: string;
  name: string;
  /** The run it was recorded from; at most one baseline of a name per run. */
  runId?: string | null;
  data: JsonValue;
  /** Epoch milliseconds; default: the database's clock. */
  createdAt?: number;
};

const COLUMNS = 'id, campaign_id, name, run_id, created_at, data';

export class BaselineRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Stores a baseline. With a `runId`, idempotent per (run, name): saving again returns the
   * baseline already stored for that run and name, unchanged.
   */
  async save(baseline: NewBaseline): Promise<StoredBaseline> {
    const runId = baseline.runId ?? null;
    const [row] = await this.db.query(
      `INSERT INTO baselines (id, campaign_id, name, run_id, created_at, data)
       VALUES ($1, $2, $3, $4, COALESCE($5::timestamptz, now()), $6::jsonb)
       ON CONFLICT (run_id, name) WHERE run_id IS NOT NULL DO NOTHING
       RETURNING ${COLUMNS}`,
      [
        baseline.id ?? newId(),
        baseline.campaignId,
        baseline.name,
        runId,
        baseline.createdAt === undefined ? null : timestampParam(baseline.createdAt),
        jsonParam(baseline.data),
      ],
    );
    if (row !== undefined) return toBaseline(row);
    const stored = runId === null ? null : await this.forRun(runId, baseline.name);
    if (stored === null)
      throw new Error(`baseline ${baseline.name} of run ${runId} vanished after a conflict`);
    return stored;
  }

  /** The baseline of that name recorded from `runId`, or null. */
  async forRun(runId: string, name: string): Promise<StoredBaseline | null> {
    const [row] = await this.db.query(`SELECT ${COLUMNS} FROM baselines WHERE run_id = $1 AND name = $2`, [
      runId,
      name,
    ]);
    return row === undefined ? null : toBaseline(row);
  }

  /** The campaign's newest baseline (of that name, when `name` is given), or null. */
  async latestForCampaign(
    campaignId: string,
    options: { name?: string } = {},
  ): Promise<StoredBaseline | null> {
    const [row] = await this.db.query(
      `SELECT ${COLUMNS} FROM baselines
        WHERE campaign_id = $1 AND ($2::text IS NULL OR name = $2)
        ORDER BY created_at DESC, id DESC
        LIMIT 1`,
      [campaignId, options.name ?? null],
    );
    return row === undefined ? null : toBaseline(row);
  }
}

function toBaseline(row: Row): StoredBaseline {
  return {
    id: String(row.id),
    campaignId: String(row.campaign_id),
    name: String(row.name),
    runId: row.run_id === null || row.run_id === undefined ? null : String(row.run_id),
    createdAt: epochMs(row.created_at),
    data: fromJsonb(row.data) as JsonValue,
  };
}
