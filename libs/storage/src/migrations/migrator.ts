import type { Database } from '../database/database';
import { MIGRATIONS, type Migration } from './migrations';

export type MigrationResult = {
  /** Versions this call applied, in order (empty when the schema was already current). */
  applied: number[];
  /** The schema version after the call. */
  version: number;
};

/**
 * Brings the schema up to the newest migration. Safe when several processes open the same
 * PostgreSQL database at once: everything runs in one transaction that first takes an advisory
 * lock keyed by the current schema, so the others wait, then find the work done. DDL is
 * transactional in PostgreSQL, so a failing migration leaves the schema as it was.
 */
export async function migrate(
  db: Database,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrationResult> {
  assertOrdered(migrations);
  return db.transaction(async (tx) => {
    // Held until this transaction ends. Keyed by schema so isolated schemas don't wait on
    // each other.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('fathom.schema_migrations:' || current_schema()))`);
    await tx.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version     integer PRIMARY KEY,
        name        text NOT NULL,
        applied_at  timestamptz NOT NULL DEFAULT now()
      )`);
    const rows = await tx.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((row) => Number(row.version)));
    const known = new Set(migrations.map((migration) => migration.version));
    const unknown = [...done].filter((version) => !known.has(version));
    if (unknown.length > 0) {
      // A newer build migrated this database; running older code over it risks corrupting it.
      throw new Error(
        `database has migrations this build does not know: ${unknown.sort((a, b) => a - b).join(', ')}`,
      );
    }
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      for (const statement of migration.statements) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.version);
    }
    return { applied, version: migrations.length === 0 ? 0 : migrations[migrations.length - 1].version };
  });
}

function assertOrdered(migrations: readonly Migration[]): void {
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new Error(
        `migration "${migration.name}" has version ${migration.version}, expected ${index + 1}`,
      );
    }
  });
}
