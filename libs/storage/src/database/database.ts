/** A JSON value as stored in a `jsonb` column. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** One result row before mapping: column name to the driver's value. */
export type Row = Record<string, unknown>;

/**
 * What a repository needs: run one statement with positional parameters ($1, $2, ...) and get
 * its rows. Both a `Database` and the `tx` handed to `transaction` satisfy it, so a repository
 * built over `tx` takes part in that transaction.
 */
export interface Queryable {
  query<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]>;
}

export type DatabaseKind = 'pglite' | 'postgres';

export interface Database extends Queryable {
  readonly kind: DatabaseKind;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws (and the
   * error rethrown). Inside `fn` use `tx` only: on PGlite (one connection) a query on the outer
   * database waits until the transaction ends, so it would deadlock.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Releases the connection(s); the instance is unusable afterwards. */
  close(): Promise<void>;
}

export type PgliteDatabaseConfig = {
  kind: 'pglite';
  /** Directory holding the database files, created when missing; `null` keeps it in memory. */
  dataDir: string | null;
  /**
   * In memory only: where a migrated, empty database is cached so later processes skip initdb
   * (`pglite-snapshot.ts`; `snapshotDirFromEnv` reads the usual place). Absent or `null`: no cache.
   */
  snapshotDir?: string | null;
  /**
   * With `dataDir` null: a new, empty directory that holds this throw-away database's files
   * instead of memory (it starts from the cached snapshot all the same). A long run's stored
   * events would otherwise grow the process's memory for as long as it lasts. The caller
   * removes the directory.
   */
  scratchDir?: string | null;
};

export type PostgresDatabaseConfig = {
  kind: 'postgres';
  /** `postgres://user@host:port/db` */
  url: string;
  /**
   * Schema every pooled connection works in (created when missing). Lets several test files or
   * deployments share one database without seeing each other's tables. Default: the server's
   * search_path (normally `public`).
   */
  schema?: string;
  /** Most connections in the pool (pg's default is 10). */
  maxConnections?: number;
};

export type DatabaseConfig = PgliteDatabaseConfig | PostgresDatabaseConfig;
