import { randomUUID } from 'node:crypto';
import type { Queryable, Row } from '../database/database';

/** A rerun decided on and waiting for its time, or started (table of migration 4). */
export interface ScheduledRerun {
  id: string;
  campaignId: string;
  parentRunId: string;
  reason: string;
  /** Epoch ms: not started before. */
  dueAt: number;
  status: 'scheduled' | 'started';
  /** The rerun's run, once started. */
  runId: string | null;
}

const COLUMNS = 'id, campaign_id, parent_run_id, reason, due_at, status, run_id';

/**
 * Rerun decisions, stored so that they outlive the orchestrator that made them: the requests
 * made while a run was still open and the reruns waiting for their time. Every method is one
 * statement, safe when several orchestrators share the database; built over a `Database` or a
 * transaction's `tx`.
 */
export class RerunRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Records that open run `parentRunId` asked for a rerun; false when it already had (the later
   * ask folds into the first, whose reason is kept).
   */
  async request(parentRunId: string, reason: string): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO rerun_requests (parent_run_id, reason) VALUES ($1, $2)
       ON CONFLICT (parent_run_id) DO NOTHING RETURNING parent_run_id`,
      [parentRunId, reason],
    );
    return rows.length > 0;
  }

  /** Removes and returns the reason run `parentRunId` asked a rerun for: one caller gets it. */
  async takeRequest(parentRunId: string): Promise<string | null> {
    const [row] = await this.db.query<{ reason: string }>(
      'DELETE FROM rerun_requests WHERE parent_run_id = $1 RETURNING reason',
      [parentRunId],
    );
    return row?.reason ?? null;
  }

  /**
   * Stores a rerun due at `dueAt`; null when the campaign already has one waiting (a unique
   * index: at most one per campaign, whichever orchestrator decided it).
   */
  async schedule(rerun: {
    campaignId: string;
    parentRunId: string;
    reason: string;
    dueAt: number;
  }): Promise<ScheduledRerun | null> {
    const [row] = await this.db.query(
      `INSERT INTO scheduled_reruns (id, campaign_id, parent_run_id, reason, due_at, status)
       VALUES ($1, $2, $3, $4, $5::timestamptz, 'scheduled')
       ON CONFLICT (campaign_id) WHERE status = 'scheduled' DO NOTHING
       RETURNING ${COLUMNS}`,
      [randomUUID(), rerun.campaignId, rerun.parentRunId, rerun.reason, new Date(rerun.dueAt).toISOString()],
    );
    return row === undefined ? null : toScheduledRerun(row);
  }

  /** Reruns not started yet, soonest first. */
  async waiting(): Promise<ScheduledRerun[]> {
    const rows = await this.db.query(
      `SELECT ${COLUMNS} FROM scheduled_reruns WHERE status = 'scheduled' ORDER BY due_at, id`,
    );
    return rows.map(toScheduledRerun);
  }

  async hasWaiting(campaignId: string): Promise<boolean> {
    const rows = await this.db.query(
      `SELECT 1 FROM scheduled_reruns WHERE campaign_id = $1 AND status = 'scheduled' LIMIT 1`,
      [campaignId],
    );
    return rows.length > 0;
  }

  async get(id: string): Promise<ScheduledRerun | null> {
    const [row] = await this.db.query(`SELECT ${COLUMNS} FROM scheduled_reruns WHERE id = $1`, [id]);
    return row === undefined ? null : toScheduledRerun(row);
  }

  /**
   * Marks a waiting rerun started by run `runId` (created in the same transaction); true for one
   * caller only: the update is conditional on 'scheduled'.
   */
  async claim(id: string, runId: string): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE scheduled_reruns SET status = 'started', run_id = $2, started_at = now()
        WHERE id = $1 AND status = 'scheduled' RETURNING id`,
      [id, runId],
    );
    return rows.length > 0;
  }
}

function toScheduledRerun(row: Row): ScheduledRerun {
  return {
    id: String(row.id),
    campaignId: String(row.campaign_id),
    parentRunId: String(row.parent_run_id),
    reason: String(row.reason),
    dueAt: new Date(row.due_at as string | Date).getTime(),
    status: row.status as ScheduledRerun['status'],
    runId: row.run_id === null ? null : String(row.run_id),
  };
}
