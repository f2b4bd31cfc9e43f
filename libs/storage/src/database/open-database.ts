import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { migrate } from '../migrations/migrator';
import type { Database, DatabaseConfig } from './database';
import { PgliteDatabase } from './pglite.database';
import { openFreshPglite, snapshotDirFromEnv } from './pglite-snapshot';
import { PostgresDatabase } from './postgres.database';

/** `FATHOM_DATA_DIR` value that keeps the embedded database in memory (PGlite's own prefix). */
export const IN_MEMORY_DATA_DIR = 'memory://';

const StorageEnvSchema = z.object({
  DATABASE_URL: z
    .string()
    .trim()
    .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must be a postgres:// or postgresql:// URL')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  FATHOM_DATA_DIR: z
    .string()
    .trim()
    .min(1)
    .optional()
    .or(z.literal('').transform(() => undefined)),
});

/**
 * Where the store lives, from the environment:
 * - `DATABASE_URL` set: that PostgreSQL server;
 * - otherwise embedded PGlite in `<FATHOM_DATA_DIR>/db`, where `FATHOM_DATA_DIR` (default
 *   `~/.fathom`) is the root of everything Fathom keeps on disk;
 * - `FATHOM_DATA_DIR=memory://`: PGlite in memory (nothing survives the process but the cached
 *   snapshot of an empty, migrated database that later processes start from: `FATHOM_CACHE_DIR`).
 * Throws with the variable's name when a value is malformed.
 */
export function databaseConfigFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  home: string = homedir(),
): DatabaseConfig {
  const parsed = StorageEnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid storage configuration: ${issue.path.join('.')}: ${issue.message}`);
  }
  const { DATABASE_URL, FATHOM_DATA_DIR } = parsed.data;
  if (DATABASE_URL !== undefined) return { kind: 'postgres', url: DATABASE_URL };
  if (FATHOM_DATA_DIR === IN_MEMORY_DATA_DIR)
    return { kind: 'pglite', dataDir: null, snapshotDir: snapshotDirFromEnv(env, home) };
  return { kind: 'pglite', dataDir: join(FATHOM_DATA_DIR ?? join(home, '.fathom'), 'db') };
}

/** Opens the database `config` names and migrates it to the newest schema before returning. */
export async function openDatabase(config: DatabaseConfig): Promise<Database> {
  if (config.kind === 'pglite' && config.dataDir === null) {
    return (await openFreshPglite(config.snapshotDir ?? null, config.scratchDir ?? null)).database;
  }
  const db: Database =
    config.kind === 'postgres'
      ? await PostgresDatabase.open(config)
      : await PgliteDatabase.open(config.dataDir);
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}
