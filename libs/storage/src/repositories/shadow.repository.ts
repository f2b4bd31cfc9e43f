import { randomUUID } from 'node:crypto';
import type { Database, Row } from '../database/database';
import { shadowRunId, type ShadowCampaignInput } from '@fathom/contracts';
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

/** A stored sample and its seq (shadow_samples.seq: increasing in the order stored, with gaps). */
export interface StoredShadowSample {
  readonly seq: number;
  readonly sample: ShadowSample;
}

/**
 * An orchestrator's hold on the running campaigns it runs (migration 10): `owner` names the
 * orchestrator (one id per process), `ttlMs` how long from now (the database's clock) the hold
 * lasts unless renewed.
 */
export interface ShadowLease {
  readonly owner: string;
  readonly ttlMs: number;
}

const COLUMNS = 'id, name, config, status, reason, report, created_at, ended_at';
const LEASE_UNTIL = `now() + $2::integer * interval '1 millisecond'`;

/** Shadow campaigns and their samples (migrations 2, 8, 10). Samples hold redacted requests only. */
export class ShadowRepository {
  constructor(private readonly db: Database) {}

  /** A running campaign, held by `lease.owner` from the start (no other orchestrator takes it over). */
  async create(config: ShadowCampaignInput, lease: ShadowLease): Promise<StoredShadowCampaign> {
    const [row] = await this.db.query(
      `INSERT INTO shadow_campaigns (id, name, config, status, owner, lease_until)
       VALUES ($3, $4, $5::jsonb, 'running', $1, ${LEASE_UNTIL}) RETURNING ${COLUMNS}`,
      [lease.owner, Math.round(lease.ttlMs), randomUUID(), config.name, JSON.stringify(config)],
    );
    return toCampaign(row);
  }

  /**
   * Extends the lease of every running campaign `lease.owner` still holds; resolves with their
   * ids. One it ran and that is missing was taken over (its lease had expired) or has ended.
   */
  async renewLeases(lease: ShadowLease): Promise<string[]> {
    const rows = await this.db.query(
      `UPDATE shadow_campaigns SET lease_until = ${LEASE_UNTIL}
        WHERE owner = $1 AND status = 'running' RETURNING id`,
      [lease.owner, Math.round(lease.ttlMs)],
    );
    return rows.map((r) => String(r.id));
  }

  /**
   * Takes over every running campaign whose lease has expired (or that never had one: running
   * before migration 10), for `lease.owner`, in one statement: of two orchestrators asking at
   * once, each campaign goes to one (the other's update finds the lease renewed and skips it).
   */
  async takeOverExpired(lease: ShadowLease): Promise<StoredShadowCampaign[]> {
    const rows = await this.db.query(
      `UPDATE shadow_campaigns SET owner = $1, lease_until = ${LEASE_UNTIL}
        WHERE status = 'running' AND (lease_until IS NULL OR lease_until <= now())
        RETURNING ${COLUMNS}`,
      [lease.owner, Math.round(lease.ttlMs)],
    );
    return rows.map(toCampaign);
  }

  /**
   * Ends `owner`'s leases on running campaigns (a clean shutdown), or on campaign `id` only (one
   * it could not run): the next orchestrator to look takes them over at once.
   */
  async releaseLeases(owner: string, id: string | null = null): Promise<void> {
    await this.db.query(
      `UPDATE shadow_campaigns SET owner = NULL, lease_until = NULL
        WHERE owner = $1 AND status = 'running' AND ($2::text IS NULL OR id = $2::text)`,
      [owner, id],
    );
  }

  /** Ids of the running live campaigns, whoever runs them (any orchestrator accepts their mirrored copies). */
  async runningLiveIds(): Promise<string[]> {
    const rows = await this.db.query(
      `SELECT id FROM shadow_campaigns WHERE status = 'running' AND config->'source'->>'type' = 'live'`,
    );
    return rows.map((r) => String(r.id));
  }

  async get(id: string): Promise<StoredShadowCampaign | null> {
    const [row] = await this.db.query(`SELECT ${COLUMNS} FROM shadow_campaigns WHERE id = $1`, [id]);
    return row ? toCampaign(row) : null;
  }

  /** Resolves with the sample's seq: its place in the order samples were stored (increasing, with gaps). */
  async addSample(campaignId: string, redactedRequest: unknown, sample: ShadowSample): Promise<number> {
    const [row] = await this.db.query(
      `INSERT INTO shadow_samples (id, shadow_campaign_id, endpoint, intent, request, observations)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb) RETURNING seq`,
      [
        randomUUID(),
        campaignId,
        sample.endpoint,
        sample.intent,
        JSON.stringify(redactedRequest),
        JSON.stringify(sample),
      ],
    );
    return Number(row.seq);
  }

  /**
   * A campaign's stored samples with a seq above `afterSeq`, oldest first: `limit` of them at
   * most, the newest (`pick` 'newest') or a uniform random choice ('random', a reservoir's
   * worth); `total`: how many there are. Only what pruning left is found.
   */
  async samplesAfter(
    campaignId: string,
    afterSeq: number,
    limit: number,
    pick: 'newest' | 'random',
  ): Promise<{ total: number; samples: StoredShadowSample[] }> {
    const rows = await this.db.query(
      `SELECT seq, observations, count(*) OVER () AS total FROM shadow_samples
        WHERE shadow_campaign_id = $1 AND seq > $2
        ORDER BY ${pick === 'random' ? 'random()' : 'seq DESC'} LIMIT $3`,
      [campaignId, afterSeq, limit],
    );
    const samples = rows
      .map((r) => ({ seq: Number(r.seq), sample: r.observations as ShadowSample }))
      .sort((a, b) => a.seq - b.seq);
    return { total: rows.length > 0 ? Number(rows[0].total) : 0, samples };
  }

  async samples(campaignId: string): Promise<Array<{ request: unknown; sample: ShadowSample }>> {
    const rows = await this.db.query(
      'SELECT request, observations FROM shadow_samples WHERE shadow_campaign_id = $1 ORDER BY seq',
      [campaignId],
    );
    return rows.map((r) => ({ request: r.request, sample: r.observations as ShadowSample }));
  }

  /**
   * A running campaign's report so far (live campaigns, once a window), written only while
   * `owner` holds it: an orchestrator that lost it (stalled past its lease) overwrites nothing.
   */
  async updateReport(
    id: string,
    report: NonNullable<StoredShadowCampaign['report']>,
    owner: string,
  ): Promise<void> {
    await this.db.query(
      `UPDATE shadow_campaigns SET report = $2::jsonb WHERE id = $1 AND status = 'running' AND owner = $3`,
      [id, JSON.stringify(report), owner],
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

  /**
   * Ends a campaign, and deletes the analyzer's breakers on its candidate (shadow_breakers, run
   * id `shadowRunId(id)`) in the same transaction: an always-on deployment starts and stops
   * campaigns for ever, and those rows would otherwise stay. The analyzer stores no breaker of a
   * campaign that has ended (ShadowBreakerRepository.save), so a window judged late adds none back.
   */
  async finish(
    id: string,
    status: 'completed' | 'failed',
    report: StoredShadowCampaign['report'],
    reason: string | null,
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        `UPDATE shadow_campaigns SET status = $2, report = $3::jsonb, reason = $4, ended_at = now(),
                lease_until = NULL
          WHERE id = $1`,
        [id, status, report === null ? null : JSON.stringify(report), reason],
      );
      await tx.query('DELETE FROM shadow_breakers WHERE run_id = $1', [shadowRunId(id)]);
    });
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
