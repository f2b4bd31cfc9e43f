import { Pool, type PoolClient } from 'pg';
import type { Database, PostgresDatabaseConfig, Queryable, Row } from './database';
import { errorCode } from './error-code.util';

/** Unquoted lower-case identifier: safe to splice into DDL and the search_path option. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** SQLSTATEs a concurrent `CREATE SCHEMA IF NOT EXISTS` can still raise when it loses the race. */
const DUPLICATE_SCHEMA_CODES = new Set(['23505', '42P06']);

/** PostgreSQL server through a `pg` pool. */
export class PostgresDatabase implements Database {
  readonly kind = 'postgres' as const;

  private constructor(
    private readonly pool: Pool,
    /** The schema every connection uses, or `null` for the server's search_path. */
    readonly schema: string | null,
  ) {}

  static async open(config: Omit<PostgresDatabaseConfig, 'kind'>): Promise<PostgresDatabase> {
    const schema = config.schema ?? null;
    if (schema !== null && !SCHEMA_NAME.test(schema)) {
      throw new Error(`invalid schema name "${schema}": use lower-case letters, digits and _`);
    }
    // The search_path goes in the startup packet, so every pooled connection has it before its
    // first statement (no race with a `connect` handler). A missing schema is allowed there.
    const pool = new Pool({
      connectionString: config.url,
      max: config.maxConnections,
      options: schema === null ? undefined : `-c search_path=${schema}`,
    });
    // An idle client's error (server restart) must not crash the process; the pool drops it.
    pool.on('error', () => undefined);
    try {
      if (schema !== null) {
        await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`).catch((error: unknown) => {
          if (!DUPLICATE_SCHEMA_CODES.has(errorCode(error) ?? '')) throw error;
        });
      } else {
        await pool.query('SELECT 1');
      }
    } catch (error) {
      await pool.end();
      throw error;
    }
    return new PostgresDatabase(pool, schema);
  }

  async query<T = Row>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    const result = await this.pool.query(sql, [...params]);
    return result.rows as T[];
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client: PoolClient = await this.pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn({
        query: async <R = Row>(sql: string, params: readonly unknown[] = []) =>
          (await client.query(sql, [...params])).rows as R[],
      });
      await client.query('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch {
        // The connection is unusable: destroy it rather than return it to the pool.
        broken = true;
      }
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    if (!this.pool.ended) await this.pool.end();
  }
}
