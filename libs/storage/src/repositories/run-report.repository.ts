import { fromJsonb } from './jsonb-text.util';
import type { JsonValue, Queryable, Row } from '../database/database';
import { errorCode, UNIQUE_VIOLATION } from '../database/error-code.util';
import { RunNotFoundError } from './run.repository';
import { epochMs, jsonParam } from './row.util';

/** One version of a run's report. The document's shape belongs to whoever writes it. */
export type StoredRunReport = {
  runId: string;
  /** 1 for the first report of a run, then 2, 3, ... */
  version: number;
  document: JsonValue;
  /** Epoch milliseconds. */
  createdAt: number;
};

const FOREIGN_KEY_VIOLATION = '23503';
/** Tries when concurrent writers pick the same next version; each retry reads the new max. */
const MAX_SAVE_ATTEMPTS = 5;

const COLUMNS = 'run_id, version, document, created_at';

export class RunReportRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Stores `document` as the run's next report version and returns it. Concurrent saves for one
   * run each get their own version (a lost race is retried), except inside a caller's PostgreSQL
   * transaction, where the conflict aborts the transaction and is thrown.
   * @throws RunNotFoundError when no run has this id.
   */
  async save(runId: string, document: JsonValue): Promise<StoredRunReport> {
    const json = jsonParam(document);
    for (let attempt = 1; ; attempt++) {
      try {
        const [row] = await this.db.query(
          `INSERT INTO run_reports (run_id, version, document)
           SELECT $1, COALESCE(MAX(version), 0) + 1, $2::jsonb FROM run_reports WHERE run_id = $1
           RETURNING ${COLUMNS}`,
          [runId, json],
        );
        return toRunReport(row);
      } catch (error) {
        const code = errorCode(error);
        if (code === FOREIGN_KEY_VIOLATION) throw new RunNotFoundError(runId);
        if (code !== UNIQUE_VIOLATION || attempt >= MAX_SAVE_ATTEMPTS) throw error;
      }
    }
  }

  async latest(runId: string): Promise<StoredRunReport | null> {
    const [row] = await this.db.query(
      `SELECT ${COLUMNS} FROM run_reports WHERE run_id = $1 ORDER BY version DESC LIMIT 1`,
      [runId],
    );
    return row === undefined ? null : toRunReport(row);
  }

  async get(runId: string, version: number): Promise<StoredRunReport | null> {
    const [row] = await this.db.query(
      `SELECT ${COLUMNS} FROM run_reports WHERE run_id = $1 AND version = $2`,
      [runId, version],
    );
    return row === undefined ? null : toRunReport(row);
  }
}

function toRunReport(row: Row): StoredRunReport {
  return {
    runId: String(row.run_id),
    version: Number(row.version),
    document: fromJsonb(row.document) as JsonValue,
    createdAt: epochMs(row.created_at),
  };
}
