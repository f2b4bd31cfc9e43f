import { randomUUID } from 'node:crypto';
import type { Database, Row } from '../database/database';
import type { ScheduleInput } from '@fathom/contracts';

export interface StoredSchedule {
  id: string;
  campaignId: string;
  mode: 'interval' | 'always-on';
  intervalMs: number;
  enabled: boolean;
  nextRunAt: number;
  lastRunId: string | null;
  createdAt: number;
}

const COLUMNS = 'id, campaign_id, mode, interval_ms, enabled, next_run_at, last_run_id, created_at';

/** Schedules (migration 2): stored, so they outlive the orchestrator that created them. */
export class ScheduleRepository {
  constructor(private readonly db: Database) {}

  async create(input: ScheduleInput, now = Date.now()): Promise<StoredSchedule> {
    const [row] = await this.db.query(
      `INSERT INTO schedules (id, campaign_id, mode, interval_ms, next_run_at)
       VALUES ($1, $2, $3, $4, $5::timestamptz) RETURNING ${COLUMNS}`,
      [
        randomUUID(),
        input.campaignId,
        input.mode,
        input.intervalMs,
        new Date(input.startAt ?? now).toISOString(),
      ],
    );
    return toSchedule(row);
  }

  async get(id: string): Promise<StoredSchedule | null> {
    const [row] = await this.db.query(`SELECT ${COLUMNS} FROM schedules WHERE id = $1`, [id]);
    return row ? toSchedule(row) : null;
  }

  async list(): Promise<StoredSchedule[]> {
    return (await this.db.query(`SELECT ${COLUMNS} FROM schedules ORDER BY created_at, id`)).map(toSchedule);
  }

  async due(now: number): Promise<StoredSchedule[]> {
    const rows = await this.db.query(
      `SELECT ${COLUMNS} FROM schedules WHERE enabled AND next_run_at <= $1::timestamptz ORDER BY next_run_at`,
      [new Date(now).toISOString()],
    );
    return rows.map(toSchedule);
  }

  /**
   * Moves the schedule from the slot it was read at to `nextRunAt`; true for one caller only
   * (compare-and-set), so two orchestrators never start the same slot.
   */
  async advance(id: string, fromRunAt: number, nextRunAt: number): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE schedules SET next_run_at = $3::timestamptz
        WHERE id = $1 AND next_run_at = $2::timestamptz AND enabled RETURNING id`,
      [id, new Date(fromRunAt).toISOString(), new Date(nextRunAt).toISOString()],
    );
    return rows.length > 0;
  }

  async setLastRun(id: string, runId: string): Promise<void> {
    await this.db.query('UPDATE schedules SET last_run_id = $2 WHERE id = $1', [id, runId]);
  }

  async disable(id: string): Promise<boolean> {
    return (
      (await this.db.query('UPDATE schedules SET enabled = false WHERE id = $1 RETURNING id', [id])).length >
      0
    );
  }
}

function toSchedule(row: Row): StoredSchedule {
  return {
    id: String(row.id),
    campaignId: String(row.campaign_id),
    mode: row.mode as StoredSchedule['mode'],
    intervalMs: Number(row.interval_ms),
    enabled: Boolean(row.enabled),
    nextRunAt: new Date(row.next_run_at as string | Date).getTime(),
    lastRunId: row.last_run_id === null ? null : String(row.last_run_id),
    createdAt: new Date(row.created_at as string | Date).getTime(),
  };
}
