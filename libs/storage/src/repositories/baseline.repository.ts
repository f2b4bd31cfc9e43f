import type { JsonValue, Queryable, Row } from '../database/database';
import { epochMs, jsonParam, newId, timestampParam } from './row.util';

/** Reference figures of a campaign that later runs are compared with. */
export type StoredBaseline = {
  id: string;
  campaignId: string;
  name: string;
  /** Epoch milliseconds. */
  createdAt: number;
  data: JsonValue;
};

export type NewBaseline = {
  /** Default: a random UUID. */
  id?: string;
  campaignId: string;
  name: string;
  data: JsonValue;
  /** Epoch milliseconds; default: the database's clock. */
  createdAt?: number;
};

const COLUMNS = 'id, campaign_id, name, created_at, data';

export class BaselineRepository {
  constructor(private readonly db: Queryable) {}

  async save(baseline: NewBaseline): Promise<StoredBaseline> {
    const [row] = await this.db.query(
      `INSERT INTO baselines (id, campaign_id, name, created_at, data)
       VALUES ($1, $2, $3, COALESCE($4::timestamptz, now()), $5::jsonb)
       RETURNING ${COLUMNS}`,
      [
        baseline.id ?? newId(),
        baseline.campaignId,
        baseline.name,
        baseline.createdAt === undefined ? null : timestampParam(baseline.createdAt),
        jsonParam(baseline.data),
      ],
    );
    return toBaseline(row);
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
    createdAt: epochMs(row.created_at),
    data: row.data as JsonValue,
  };
}
