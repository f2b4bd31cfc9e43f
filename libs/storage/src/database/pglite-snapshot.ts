import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { migrate } from '../migrations/migrator';
import { MIGRATIONS, type Migration } from '../migrations/migrations';
import { PgliteDatabase } from './pglite.database';

/** `FATHOM_CACHE_DIR` value that turns the snapshot cache off. */
export const SNAPSHOT_CACHE_OFF = 'off';

/**
 * Where a migrated, empty in-memory database is kept between processes: `FATHOM_CACHE_DIR`,
 * else `$XDG_CACHE_HOME/fathom`, else `~/.cache/fathom`; `null` when `FATHOM_CACHE_DIR=off`.
 */
export function snapshotDirFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  home: string = homedir(),
): string | null {
  const dir = env['FATHOM_CACHE_DIR']?.trim();
  if (dir === SNAPSHOT_CACHE_OFF) return null;
  if (dir) return dir;
  const xdg = env['XDG_CACHE_HOME']?.trim();
  return join(xdg ? xdg : join(home, '.cache'), 'fathom');
}

/** PGlite's own version (its package.json is not exported; found from its entry point). */
function pgliteVersion(): string | null {
  try {
    const entry = require.resolve('@electric-sql/pglite');
    const pkg = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : null;
  } catch {
    return null;
  }
}

/**
 * Names what a snapshot holds: PGlite's version and every migration's statements. A build with
 * another schema or another PGlite never loads it. `null` when PGlite's version is unknown.
 */
export function snapshotKey(
  migrations: readonly Migration[] = MIGRATIONS,
  version = pgliteVersion(),
): string | null {
  if (version === null) return null;
  const hash = createHash('sha256').update(`pglite ${version}\n`);
  for (const m of migrations) hash.update(`${m.version} ${m.name}\n${m.statements.join('\n;\n')}\n`);
  return hash.digest('hex').slice(0, 24);
}

export type FreshOpen = {
  database: PgliteDatabase;
  /** Whether it started from the cached snapshot (no initdb) rather than from scratch. */
  fromSnapshot: boolean;
};

/**
 * Opens a throw-away PGlite, in memory or in `scratchDir` (a new, empty directory), migrated to
 * the newest schema. PostgreSQL's initdb inside WASM takes 2-6 s on the 2-core host, most of
 * `fathom run`'s start; a snapshot of the migrated, empty database loads in under 1 s. So the
 * first process writes the snapshot to `snapshotDir` (atomically, by rename) and later ones start
 * from it. A snapshot that cannot be read or does not load is deleted and the database made from
 * scratch; a cache that cannot be written is skipped. Either way the caller gets a current,
 * empty database.
 */
export async function openFreshPglite(
  snapshotDir: string | null,
  scratchDir: string | null = null,
): Promise<FreshOpen> {
  const key = snapshotDir === null ? null : snapshotKey();
  const file = snapshotDir === null || key === null ? null : join(snapshotDir, `pglite-${key}.tar.gz`);
  if (file !== null) {
    const bytes = await readFile(file).catch(() => null);
    if (bytes !== null) {
      const opened = await PgliteDatabase.open(scratchDir, { loadDataDir: new Blob([bytes]) }).catch(
        () => null,
      );
      if (opened !== null) {
        try {
          await migrate(opened);
          return { database: opened, fromSnapshot: true };
        } catch {
          await opened.close().catch(() => undefined);
        }
      }
      await unlink(file).catch(() => undefined);
      // What a failed load left in the scratch directory would be taken for a database.
      if (scratchDir !== null) await emptyDir(scratchDir);
    }
  }
  const database = await PgliteDatabase.open(scratchDir);
  try {
    await migrate(database);
  } catch (error) {
    await database.close();
    throw error;
  }
  if (file !== null) await writeSnapshot(database, file);
  return { database, fromSnapshot: false };
}

async function emptyDir(dir: string): Promise<void> {
  const entries = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(entries.map((entry) => rm(join(dir, entry), { recursive: true, force: true })));
}

async function writeSnapshot(database: PgliteDatabase, file: string): Promise<void> {
  const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
  try {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    await writeFile(partial, Buffer.from(await (await database.dump()).arrayBuffer()), { mode: 0o600 });
    await rename(partial, file);
  } catch {
    await unlink(partial).catch(() => undefined);
  }
}
