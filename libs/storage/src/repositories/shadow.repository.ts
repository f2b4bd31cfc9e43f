import { randomUUID } from 'node:crypto';
import type { Database, Row } from '../database/database';
import type { ShadowCampaignInput } from '@fathom/contracts';
import type { ShadowGroupReport, ShadowLiveStatus, ShadowSample } from '@fathom/contracts';

export interface StoredShadowCampaign {
  id: string;
  name: string;
  config: ShadowCampaignInput;
  status: 'running' | 'completed' | 'failed';
  reason: string | null;
  report: {
    samples: number;
    similarity: 'compared' | 'not configured';
    groups: ShadowGroupReport[];
    /** Live campaigns: caps, breaker, tier and rolling windows (updated while it runs). */
    live?: ShadowLiveStatus;
  } | null;
  createdAt: number;
  endedAt: number | null;
}

const COLUMNS = 'id, name, config, status, reason, report, created_at, ended_at';

/** Shadow campaigns and their samples (migrations 2, 8). Samples hold redacted requests only. */
export class ShadowRepository {
  constructor(private readonly db: Database) {}

  async create(config: ShadowCampaignInput): Promise<StoredShadowCampaign> {
    const [row] = await this.db.query(
      `INSERT INTO shadow_campaigns (id, name, config, status) VALUES ($1, $2, $3::jsonb, 'running') RETURNING ${COLUMNS}`,
      [randomUUID(), config.name, JSON.stringify(config)],
    );
    return toCampaign(row);
  }

  async get(id: string): Promise<StoredShadowCampaign | null> {
    const [row] = await this.db.query(`SELECT ${COLUMNS} FROM shadow_campaigns WHERE id = $1`, [id]);
    return row ? toCampaign(row) : null;
  }

  async addSample(campaignId: string, redactedRequest: unknown, sample: ShadowSample): Promise<void> {
    await this.db.query(
      `INSERT INTO shadow_samples (id, shadow_campaign_id, endpoint, intent, request, observations)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb)`,
      [
        randomUUID(),
        campaignId,
        sample.endpoint,
        sample.intent,
        JSON.stringify(redactedRequest),
        JSON.stringify(sample),
      ],
    );
  }

  async samples(campaignId: string): Promise<Array<{ request: unknown; sample: ShadowSample }>> {
    const rows = await this.db.query(
      'SELECT request, observations FROM shadow_samples WHERE shadow_campaign_id = $1 ORDER BY seq',
      [campaignId],
    );
    return rows.map((r) => ({ request: r.request, sample: r.observations as ShadowSample }));
  }

  /** A running campaign's report so far (live campaigns, once a window). */
  async updateReport(id: string, report: NonNullable<StoredShadowCampaign['report']>): Promise<void> {
    await this.db.query(
      `UPDATE shadow_campaigns SET report = $2::jsonb WHERE id = $1 AND status = 'running'`,
      [id, JSON.stringify(report)],
    );
  }

  /** Deletes all but the newest `keep` samples of a campaign (in stored order); returns how many went. */
  async pruneSamples(campaignId: string, keep: number): Promise<number> {
    const [row] = await this.db.query<{ count: number }>(
      `WITH gone AS (
         DELETE FROM shadow_samples WHERE id IN (
           SELECT id FROM shadow_samples WHERE shadow_campaign_id = $1 ORDER BY seq DESC OFFSET $2
         ) RETURNING 1
       ) SELECT count(*)::integer AS count FROM gone`,
      [campaignId, keep],
    );
    return Number(row.count);
  }

  async finish(
    id: string,
    status: 'completed' | 'failed',
    report: StoredShadowCampaign['report'],
    reason: string | null,
  ): Promise<void> {
    await this.db.query(
      `UPDATE shadow_campaigns SET status = $2, report = $3::jsonb, reason = $4, ended_at = now() WHERE id = $1`,
      [id, status, report === null ? null : JSON.stringify(report), reason],
    );
  }
}

function toCampaign(row: Row): StoredShadowCampaign {
  return {
    id: String(row.id),
    name: String(row.name),
    config: row.config as ShadowCampaignInput,
    status: row.status as StoredShadowCampaign['status'],
    reason: row.reason === null ? null : String(row.reason),
    report: (row.report ?? null) as StoredShadowCampaign['report'],
    createdAt: new Date(row.created_at as string | Date).getTime(),
    endedAt: row.ended_at === null ? null : new Date(row.ended_at as string | Date).getTime(),
  };
}
