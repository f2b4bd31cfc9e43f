import { fromJsonb } from './jsonb-text.util';
import type { JsonValue, Queryable, Row } from '../database/database';
import { epochMs, jsonParam, timestampParam } from './row.util';

/** One event of a run as stored: the bus event's id makes storing it idempotent. */
export type RunEventRecord = {
  eventId: string;
  runId: string;
  /** The bus topic it came from, e.g. `fathom.state.slo-tier.v1`. */
  topic: string;
  /** What happened, within the topic (e.g. `shard-finished`, `tier-changed`). */
  kind: string;
  /** Epoch milliseconds (the event's own timestamp, not when it was stored). */
  occurredAt: number;
  payload: JsonValue;
};

/** Parameters per row in the insert below. */
const PARAMS_PER_ROW = 6;
/**
 * Rows per INSERT statement: PostgreSQL's wire protocol caps a statement at 65,535 parameters
 * (16-bit count); 5,000 rows x 6 stays well under it.
 */
export const RUN_EVENT_ROWS_PER_STATEMENT = 5000;

const COLUMNS = 'event_id, run_id, topic, kind, occurred_at, payload';

/** One keyset page of a run's events ($1 run, $2 topic, $3 kinds, $4/$5 cursor, $6 limit). */
export const PAGE_BY_RUN_SQL = `SELECT ${COLUMNS} FROM run_events
  WHERE run_id = $1 AND ($2::text IS NULL OR topic = $2) AND ($3::text[] IS NULL OR kind = ANY($3::text[]))
    AND ($4::timestamptz IS NULL OR (occurred_at, event_id) > ($4::timestamptz, $5::text))
  ORDER BY occurred_at, event_id
  LIMIT $6`;

/** Where a page of a run's events ended: the next page starts after this event (keyset). */
export type RunEventCursor = Pick<RunEventRecord, 'occurredAt' | 'eventId'>;

/** Which of a run's events to read, page by page. */
export interface RunEventPageQuery {
  readonly topic?: string;
  /** Only events of these kinds (absent: every kind), still in one stored order. */
  readonly kinds?: readonly string[];
  /** Events per page (a positive integer); a page holds its rows' payloads, parsed. */
  readonly pageSize: number;
}

/** Statistics are gathered from this size of run_events on (pages of 8 KB: 1 MB)... */
const STATISTICS_MIN_PAGES = 128;
/** ...and again once it grew by this factor since. */
const STATISTICS_STALE_GROWTH = 1.25;

export class RunEventRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Stores events with one multi-row INSERT ... ON CONFLICT (event_id) DO NOTHING (one per
   * 5,000 events), and returns how many were new: an event already stored, or repeated within
   * `events`, is not counted twice. Batches larger than one statement are not atomic, but
   * retrying the whole batch after a failure is safe and counts only what the first try missed.
   */
  async appendMany(events: readonly RunEventRecord[]): Promise<number> {
    let inserted = 0;
    for (let start = 0; start < events.length; start += RUN_EVENT_ROWS_PER_STATEMENT) {
      const chunk = events.slice(start, start + RUN_EVENT_ROWS_PER_STATEMENT);
      const params: unknown[] = [];
      const values = chunk.map((event, index) => {
        params.push(
          event.eventId,
          event.runId,
          event.topic,
          event.kind,
          timestampParam(event.occurredAt),
          jsonParam(event.payload),
        );
        const p = index * PARAMS_PER_ROW;
        return `($${p + 1}, $${p + 2}, $${p + 3}, $${p + 4}, $${p + 5}::timestamptz, $${p + 6}::jsonb)`;
      });
      const rows = await this.db.query(
        `INSERT INTO run_events (${COLUMNS}) VALUES ${values.join(', ')}
         ON CONFLICT (event_id) DO NOTHING
         RETURNING event_id`,
        params,
      );
      inserted += rows.length;
    }
    return inserted;
  }

  /** The run's events, oldest first (ties broken by event id); `topic` and `kind` narrow them. */
  async listByRun(
    runId: string,
    options: { topic?: string; kind?: string; limit?: number } = {},
  ): Promise<RunEventRecord[]> {
    const rows = await this.db.query(
      `SELECT ${COLUMNS} FROM run_events
        WHERE run_id = $1 AND ($2::text IS NULL OR topic = $2) AND ($3::text IS NULL OR kind = $3)
        ORDER BY occurred_at, event_id
        LIMIT $4`,
      [runId, options.topic ?? null, options.kind ?? null, options.limit ?? null],
    );
    return rows.map(toRunEvent);
  }

  /**
   * The events of `listByRun`, in its order, `limit` at a time after `after` (keyset on
   * (occurred_at, event_id), so a page costs the same however deep into the run it starts, and an
   * event stored meanwhile before the cursor is not read twice).
   */
  async pageByRun(
    runId: string,
    options: { topic?: string; kinds?: readonly string[]; after?: RunEventCursor | null; limit: number },
  ): Promise<RunEventRecord[]> {
    if (!Number.isInteger(options.limit) || options.limit < 1)
      throw new RangeError(`page size must be a positive integer, got ${options.limit}`);
    const after = options.after ?? null;
    const rows = await this.db.query(PAGE_BY_RUN_SQL, [
      runId,
      options.topic ?? null,
      options.kinds ? [...options.kinds] : null,
      after ? timestampParam(after.occurredAt) : null,
      after ? after.eventId : null,
      options.limit,
    ]);
    return rows.map(toRunEvent);
  }

  /**
   * A run's events (as `listByRun` orders them) in pages of `pageSize`: the caller folds each page
   * and lets it go, so reading a run back holds one page, not the run.
   */
  async *pagesByRun(runId: string, query: RunEventPageQuery): AsyncGenerator<RunEventRecord[]> {
    await this.refreshStatistics();
    let after: RunEventCursor | null = null;
    for (;;) {
      const page = await this.pageByRun(runId, { ...query, after, limit: query.pageSize });
      if (page.length) yield page;
      if (page.length < query.pageSize) return;
      const last = page[page.length - 1];
      after = { occurredAt: last.occurredAt, eventId: last.eventId };
    }
  }

  /**
   * Gathers the planner's statistics of run_events (ANALYZE) when the table grew by a quarter
   * since they were last gathered, or never was (at least 1 MB). PGlite runs no autovacuum, so it
   * never had any: a keyset page was then planned as a bitmap scan of every event after the
   * cursor and a sort, so reading a run back cost the square of its events (a 190 s run at 1,000
   * records a second did not report within 5 minutes); with them each page is an index scan of
   * its own rows. Returns whether it gathered them.
   */
  async refreshStatistics(): Promise<boolean> {
    const [row] = await this.db.query<{ analyzed: number; pages: number }>(
      `SELECT relpages::float8 AS analyzed,
              (pg_relation_size(oid) / current_setting('block_size')::integer)::float8 AS pages
         FROM pg_class WHERE oid = 'run_events'::regclass`,
    );
    const pages = Number(row.pages);
    if (pages < STATISTICS_MIN_PAGES || pages <= Number(row.analyzed) * STATISTICS_STALE_GROWTH) return false;
    await this.db.query('ANALYZE run_events');
    return true;
  }

  async countByRun(runId: string, options: { topic?: string; kind?: string } = {}): Promise<number> {
    const [row] = await this.db.query<{ count: number }>(
      `SELECT count(*)::integer AS count FROM run_events
        WHERE run_id = $1 AND ($2::text IS NULL OR topic = $2) AND ($3::text IS NULL OR kind = $3)`,
      [runId, options.topic ?? null, options.kind ?? null],
    );
    return Number(row.count);
  }

  /**
   * Deletes all but the newest `keep` events of a run (by event time, then event id), for runs
   * that never end (a live shadow campaign's signals); returns how many went.
   */
  async pruneRun(runId: string, keep: number): Promise<number> {
    const [row] = await this.db.query<{ count: number }>(
      `WITH gone AS (
         DELETE FROM run_events WHERE run_id = $1 AND event_id IN (
           SELECT event_id FROM run_events WHERE run_id = $1
            ORDER BY occurred_at DESC, event_id DESC OFFSET $2
         ) RETURNING 1
       ) SELECT count(*)::integer AS count FROM gone`,
      [runId, keep],
    );
    return Number(row.count);
  }

  /**
   * The number of items in the array at `arrayKey` summed over a run's events of one kind (events
   * that batch several items in one row, e.g. token stats), counted by the database.
   */
  async countItemsByRun(runId: string, kind: string, arrayKey: string): Promise<number> {
    const [row] = await this.db.query<{ count: number }>(
      `SELECT COALESCE(SUM(CASE WHEN jsonb_typeof(payload -> $3) = 'array'
                                THEN jsonb_array_length(payload -> $3) ELSE 0 END), 0)::integer AS count
         FROM run_events WHERE run_id = $1 AND kind = $2`,
      [runId, kind, arrayKey],
    );
    return Number(row.count);
  }
}

function toRunEvent(row: Row): RunEventRecord {
  return {
    eventId: String(row.event_id),
    runId: String(row.run_id),
    topic: String(row.topic),
    kind: String(row.kind),
    occurredAt: epochMs(row.occurred_at),
    payload: fromJsonb(row.payload) as JsonValue,
  };
}
