import { fromJsonb } from './jsonb-text.util';
import { CampaignSpecSchema, type CampaignSpec } from '@fathom/contracts';
import type { Queryable, Row } from '../database/database';
import { epochMs, jsonParam, newId, timestampParam } from './row.util';

export type StoredCampaign = {
  id: string;
  name: string;
  spec: CampaignSpec;
  /** Epoch milliseconds. */
  createdAt: number;
};

export type NewCampaign = {
  /** Default: a random UUID. */
  id?: string;
  /** Default: `spec.name`. */
  name?: string;
  spec: CampaignSpec;
  /** Epoch milliseconds; default: the database's clock. */
  createdAt?: number;
};

const COLUMNS = 'id, name, spec, created_at';

export class CampaignRepository {
  constructor(private readonly db: Queryable) {}

  /** Stores a campaign; the spec is validated against the contract first. */
  async create(campaign: NewCampaign): Promise<StoredCampaign> {
    const spec = CampaignSpecSchema.parse(campaign.spec);
    const [row] = await this.db.query(
      `INSERT INTO campaigns (id, name, spec, created_at)
       VALUES ($1, $2, $3::jsonb, COALESCE($4::timestamptz, now()))
       RETURNING ${COLUMNS}`,
      [
        campaign.id ?? newId(),
        campaign.name ?? spec.name,
        jsonParam(spec),
        campaign.createdAt === undefined ? null : timestampParam(campaign.createdAt),
      ],
    );
    return toCampaign(row);
  }

  async get(id: string): Promise<StoredCampaign | null> {
    const [row] = await this.db.query(`SELECT ${COLUMNS} FROM campaigns WHERE id = $1`, [id]);
    return row === undefined ? null : toCampaign(row);
  }

  /** Newest first. */
  async list(options: { limit?: number } = {}): Promise<StoredCampaign[]> {
    const rows = await this.db.query(
      `SELECT ${COLUMNS} FROM campaigns ORDER BY created_at DESC, id DESC LIMIT $1`,
      [options.limit ?? null],
    );
    return rows.map(toCampaign);
  }
}

function toCampaign(row: Row): StoredCampaign {
  return {
    id: String(row.id),
    name: String(row.name),
    spec: CampaignSpecSchema.parse(fromJsonb(row.spec)),
    createdAt: epochMs(row.created_at),
  };
}
