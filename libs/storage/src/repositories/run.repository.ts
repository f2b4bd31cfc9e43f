import { fromJsonb } from './jsonb-text.util';
import {
  RunStatusSchema,
  RunSummarySchema,
  RunTriggerSchema,
  type RunStatus,
  type RunSummary,
  type RunTrigger,
} from '@fathom/contracts';
import type { Queryable, Row } from '../database/database';
import {
  epochMs,
  epochMsOrNull,
  jsonParam,
  newId,
  placeholders,
  textParam,
  timestampParam,
} from './row.util';

export type StoredRun = {
  id: string;
  campaignId: string;
  status: RunStatus;
  trigger: RunTrigger;
  /** The run this one reruns, or null. */
  parentRunId: string | null;
  /** Why the run exists (reruns) or why it ended (failed, aborted); the latest one given. */
  reason: string | null;
  /** Epoch milliseconds, like every timestamp below. */
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  summary: RunSummary | null;
  /**
   * When the run's plan (its shard commands) was handed to the bus; null while it is still owed
   * (see `claimPlan`).
   */
  planPublishedAt: number | null;
};

export type NewRun = {
  /** Default: a random UUID. */
  id?: string;
  campaignId: string;
  trigger: RunTrigger;
  parentRunId?: string | null;
  reason?: string | null;
  /** Epoch milliseconds; default: the database's clock. */
  createdAt?: number;
};

export type RunListFilter = {
  campaignId?: string;
  /** One status or any of several. */
  status?: RunStatus | readonly RunStatus[];
  limit?: number;
  /** Keyset paging: only runs listed after this one (newest first); its id, from the last page. */
  after?: string;
};

/** What the rerun policy reads of a campaign's runs, counted by the database in one query. */
export type CampaignRunTally = {
  /** Runs with trigger 'rerun', whatever their status. */
  reruns: number;
  /** Of those, the ones not yet ended (pending or running). */
  openReruns: number;
  /** Runs of any trigger with no end yet. */
  unended: number;
  /** The latest end among the campaign's runs (epoch ms), null when none has ended. */
  lastEndedAt: number | null;
};

/**
 * The run lifecycle: pending -> running -> completed | partial | failed | aborted, and a run that
 * never started may still fail or be aborted. The four end states are final.
 */
export const RUN_TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  pending: ['running', 'failed', 'aborted'],
  running: ['completed', 'partial', 'failed', 'aborted'],
  completed: [],
  partial: [],
  failed: [],
  aborted: [],
};

export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['completed', 'partial', 'failed', 'aborted'];

export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return RUN_TRANSITIONS[from].includes(to);
}

export class RunNotFoundError extends Error {
  constructor(readonly runId: string) {
    super(`run ${runId} not found`);
    this.name = 'RunNotFoundError';
  }
}

const COLUMNS =
  'id, campaign_id, status, trigger, parent_run_id, reason, created_at, started_at, ended_at, summary, ' +
  'plan_published_at';

export class RunRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Stores a new run in `pending`. Its `createdAt` is the insert's own time (clock_timestamp), not
   * its transaction's start (now()): a rerun whose transaction waited for the campaign's lock
   * while another run ended was otherwise dated before that run's end, though it came after it.
   */
  async create(run: NewRun): Promise<StoredRun> {
    const [row] = await this.db.query(
      `INSERT INTO runs (id, campaign_id, status, trigger, parent_run_id, reason, created_at)
       VALUES ($1, $2, 'pending', $3, $4, $5, COALESCE($6::timestamptz, clock_timestamp()))
       RETURNING ${COLUMNS}`,
      [
        run.id ?? newId(),
        run.campaignId,
        RunTriggerSchema.parse(run.trigger),
        run.parentRunId ?? null,
        run.reason ?? null,
        run.createdAt === undefined ? null : timestampParam(run.createdAt),
      ],
    );
    return toRun(row);
  }

  async get(id: string): Promise<StoredRun | null> {
    const [row] = await this.db.query(`SELECT ${COLUMNS} FROM runs WHERE id = $1`, [id]);
    return row === undefined ? null : toRun(row);
  }

  /** Newest first. */
  async list(filter: RunListFilter = {}): Promise<StoredRun[]> {
    const conditions: string[] = [];
    const params: unknown[] = [];
    if (filter.campaignId !== undefined) {
      params.push(filter.campaignId);
      conditions.push(`campaign_id = $${params.length}`);
    }
    if (filter.status !== undefined) {
      const statuses: readonly RunStatus[] =
        typeof filter.status === 'string' ? [filter.status] : filter.status;
      if (statuses.length === 0) return [];
      conditions.push(`status IN (${placeholders(params.length + 1, statuses.length)})`);
      params.push(...statuses);
    }
    if (filter.after !== undefined) {
      params.push(filter.after);
      // Compared on the stored timestamp itself (microseconds), not a rounded copy in the cursor.
      conditions.push(`(created_at, id) < (SELECT created_at, id FROM runs WHERE id = $${params.length})`);
    }
    params.push(filter.limit ?? null);
    const where = conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`;
    const rows = await this.db.query(
      `SELECT ${COLUMNS} FROM runs ${where} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map(toRun);
  }

  /**
   * Campaign `campaignId`'s runs as the rerun policy reads them, aggregated in the database: a
   * campaign scheduled every few minutes for years holds hundreds of thousands of runs, and the
   * policy needs four figures of them, not every row.
   */
  async tally(campaignId: string): Promise<CampaignRunTally> {
    const [row] = await this.db.query(
      `SELECT count(*) FILTER (WHERE trigger = 'rerun') AS reruns,
              count(*) FILTER (WHERE trigger = 'rerun' AND status IN ('pending', 'running')) AS open_reruns,
              count(*) FILTER (WHERE ended_at IS NULL) AS unended,
              max(ended_at) AS last_ended_at
         FROM runs WHERE campaign_id = $1`,
      [campaignId],
    );
    return {
      reruns: Number(row?.reruns ?? 0),
      openReruns: Number(row?.open_reruns ?? 0),
      unended: Number(row?.unended ?? 0),
      lastEndedAt: epochMsOrNull(row?.last_ended_at ?? null),
    };
  }

  /**
   * Moves run `id` to `to` when the lifecycle allows it from the status it has now; returns
   * whether it changed. A refused move (illegal, or already there: a redelivered command) changes
   * nothing and returns false. One conditional UPDATE, so two callers racing cannot both win.
   * `at` (epoch ms, default now) becomes `startedAt` on entering running and `endedAt` on
   * entering an end state; `reason`, when given, replaces the stored one.
   * @throws RunNotFoundError when no run has this id.
   */
  async transition(
    id: string,
    to: RunStatus,
    options: { reason?: string; at?: number } = {},
  ): Promise<boolean> {
    const target = RunStatusSchema.parse(to);
    const from = (Object.keys(RUN_TRANSITIONS) as RunStatus[]).filter((status) =>
      canTransition(status, target),
    );
    if (from.length > 0) {
      const at = timestampParam(options.at ?? Date.now());
      const changed = await this.db.query(
        `UPDATE runs
            SET status = $2,
                reason = COALESCE($3, reason),
                started_at = COALESCE($4::timestamptz, started_at),
                ended_at = COALESCE($5::timestamptz, ended_at)
          WHERE id = $1 AND status IN (${placeholders(6, from.length)})
          RETURNING id`,
        [
          id,
          target,
          textParam(options.reason),
          target === 'running' ? at : null,
          TERMINAL_RUN_STATUSES.includes(target) ? at : null,
          ...from,
        ],
      );
      if (changed.length > 0) return true;
    }
    await this.requireExists(id);
    return false;
  }

  /**
   * Stores (or replaces) the run's summary, validated against the contract.
   * @throws RunNotFoundError when no run has this id.
   */
  async saveSummary(id: string, summary: RunSummary): Promise<void> {
    const valid = RunSummarySchema.parse(summary);
    const updated = await this.db.query('UPDATE runs SET summary = $2::jsonb WHERE id = $1 RETURNING id', [
      id,
      jsonParam(valid),
    ]);
    if (updated.length === 0) throw new RunNotFoundError(id);
  }

  /**
   * Pending runs whose plan was never handed to the bus, oldest first: the plans owed after an
   * orchestrator died between creating a run and publishing its plan, or the bus refused it.
   */
  async listOwedPlans(limit = 100): Promise<StoredRun[]> {
    const rows = await this.db.query(
      `SELECT ${COLUMNS} FROM runs
        WHERE plan_published_at IS NULL AND status = 'pending'
        ORDER BY created_at, id LIMIT $1`,
      [limit],
    );
    return rows.map(toRun);
  }

  /**
   * Claims pending run `id`'s owed plan for publishing: marks it published and returns the run,
   * or null when it is not owed (published already, no longer pending) or another transaction
   * is publishing it right now (its row lock is skipped, not waited for). Call it on a
   * transaction's `tx` and publish the plan before that transaction commits: a publish that
   * throws rolls the mark back, so the plan stays owed, and a process that dies mid-publish
   * leaves it owed too (its transaction never commits). Every orchestrator sharing the database
   * publishes a plan through this, so it is handed out once.
   */
  async claimPlan(id: string): Promise<StoredRun | null> {
    const [row] = await this.db.query(
      `UPDATE runs SET plan_published_at = clock_timestamp()
        WHERE id = (SELECT id FROM runs
                     WHERE id = $1 AND status = 'pending' AND plan_published_at IS NULL
                     FOR UPDATE SKIP LOCKED)
        RETURNING ${COLUMNS}`,
      [id],
    );
    return row === undefined ? null : toRun(row);
  }

  /**
   * Takes campaign `campaignId`'s run lock (a transaction-scoped PostgreSQL advisory lock) until
   * the surrounding transaction ends. Whoever creates a run under it, having first looked at the
   * campaign's open runs, does both as one step against every other process on this database.
   * Call it on a transaction's `tx`: outside a transaction the lock is released at once.
   */
  async lockCampaign(campaignId: string): Promise<void> {
    await this.db.query(`SELECT pg_advisory_xact_lock(hashtext('fathom.campaign-runs:' || $1))`, [
      campaignId,
    ]);
  }

  private async requireExists(id: string): Promise<void> {
    const rows = await this.db.query('SELECT 1 FROM runs WHERE id = $1', [id]);
    if (rows.length === 0) throw new RunNotFoundError(id);
  }
}

function toRun(row: Row): StoredRun {
  return {
    id: String(row.id),
    campaignId: String(row.campaign_id),
    status: RunStatusSchema.parse(row.status),
    trigger: RunTriggerSchema.parse(row.trigger),
    parentRunId: row.parent_run_id === null ? null : String(row.parent_run_id),
    reason: row.reason === null ? null : String(row.reason),
    createdAt: epochMs(row.created_at),
    startedAt: epochMsOrNull(row.started_at),
    endedAt: epochMsOrNull(row.ended_at),
    summary: row.summary === null ? null : RunSummarySchema.parse(fromJsonb(row.summary)),
    planPublishedAt: epochMsOrNull(row.plan_published_at),
  };
}
