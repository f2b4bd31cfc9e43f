import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS } from '../migrations/migrations';
import { PgliteDatabase } from './pglite.database';
import { openFreshPglite, snapshotDirFromEnv, snapshotKey } from './pglite-snapshot';

describe(snapshotDirFromEnv.name, () => {
  it('takes FATHOM_CACHE_DIR, then XDG_CACHE_HOME/fathom, then ~/.cache/fathom; off turns it off', () => {
    expect(snapshotDirFromEnv({ FATHOM_CACHE_DIR: '/c', XDG_CACHE_HOME: '/x' }, '/home/ada')).toBe('/c');
    expect(snapshotDirFromEnv({ XDG_CACHE_HOME: '/x' }, '/home/ada')).toBe('/x/fathom');
    expect(snapshotDirFromEnv({ FATHOM_CACHE_DIR: ' ', XDG_CACHE_HOME: '' }, '/home/ada')).toBe(
      '/home/ada/.cache/fathom',
    );
    expect(snapshotDirFromEnv({ FATHOM_CACHE_DIR: 'off' }, '/home/ada')).toBeNull();
  });
});

describe(snapshotKey.name, () => {
  it('changes with any migration statement and with PGlite version', () => {
    const key = snapshotKey(MIGRATIONS, '0.5.17');
    expect(key).toMatch(/^[0-9a-f]{24}$/);
    expect(snapshotKey(MIGRATIONS, '0.5.17')).toBe(key);
    expect(snapshotKey(MIGRATIONS, '0.5.18')).not.toBe(key);
    const edited = MIGRATIONS.map((m, i) =>
      i === MIGRATIONS.length - 1 ? { ...m, statements: [...m.statements, 'SELECT 1'] } : m,
    );
    expect(snapshotKey(edited, '0.5.17')).not.toBe(key);
    expect(snapshotKey(MIGRATIONS.slice(0, -1), '0.5.17')).not.toBe(key);
    expect(snapshotKey(MIGRATIONS, null)).toBeNull();
  });
});

describe(openFreshPglite.name, () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'fathom-snapshot-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const newest = MIGRATIONS[MIGRATIONS.length - 1].version;
  const versions = async (db: { query<T>(sql: string): Promise<T[]> }) =>
    (await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map((r) =>
      Number(r.version),
    );

  it('writes a snapshot once, starts later databases from it, empty and current', async () => {
    const first = await openFreshPglite(dir);
    expect(first.fromSnapshot).toBe(false);
    // What the first process writes after its snapshot stays out of the snapshot.
    await first.database.query('CREATE TABLE written_after (x int)');
    await first.database.close();
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^pglite-[0-9a-f]{24}\.tar\.gz$/);

    const second = await openFreshPglite(dir);
    expect(second.fromSnapshot).toBe(true);
    expect(await versions(second.database)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(Math.max(...(await versions(second.database)))).toBe(newest);
    const leftovers = await second.database.query<{ n: string }>(
      `SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'written_after'`,
    );
    expect(Number(leftovers[0].n)).toBe(0);
    // It is a working database of its own.
    await second.database.query('CREATE TABLE mine (x int)');
    await second.database.query('INSERT INTO mine VALUES (1)');
    expect(await second.database.query('SELECT x FROM mine')).toEqual([{ x: 1 }]);
    await second.database.close();
  }, 60_000);

  it('replaces a snapshot that does not load and still opens', async () => {
    const key = snapshotKey();
    const file = join(dir, `pglite-${key}.tar.gz`);
    writeFileSync(file, 'not a tarball');
    const opened = await openFreshPglite(dir);
    expect(opened.fromSnapshot).toBe(false);
    expect(await versions(opened.database)).toEqual(MIGRATIONS.map((m) => m.version));
    await opened.database.close();
    expect(readFileSync(file).length).toBeGreaterThan(1000);
    const again = await openFreshPglite(dir);
    expect(again.fromSnapshot).toBe(true);
    await again.database.close();
  }, 60_000);

  it('keeps the database in a scratch directory instead of memory, from the snapshot or from scratch', async () => {
    const fresh = join(dir, 'scratch-1');
    mkdirSync(fresh);
    const first = await openFreshPglite(join(dir, 'cache'), fresh);
    expect(first.fromSnapshot).toBe(false);
    await first.database.query('CREATE TABLE mine (x int)');
    await first.database.query('INSERT INTO mine VALUES (1)');
    await first.database.close();
    expect(readdirSync(fresh)).toContain('PG_VERSION');
    // The same directory opened again is the same database: its files were on disk.
    const reopened = await PgliteDatabase.open(fresh);
    expect(await reopened.query('SELECT x FROM mine')).toEqual([{ x: 1 }]);
    await reopened.close();

    const another = join(dir, 'scratch-2');
    mkdirSync(another);
    const second = await openFreshPglite(join(dir, 'cache'), another);
    expect(second.fromSnapshot).toBe(true);
    expect(await versions(second.database)).toEqual(MIGRATIONS.map((m) => m.version));
    await second.database.close();
    expect(readdirSync(another)).toContain('PG_VERSION');
  }, 60_000);

  it('starts from scratch in a scratch directory where the snapshot does not load', async () => {
    mkdirSync(join(dir, 'cache'));
    writeFileSync(join(dir, 'cache', `pglite-${snapshotKey()}.tar.gz`), 'not a tarball');
    const scratch = join(dir, 'scratch');
    mkdirSync(scratch);
    const opened = await openFreshPglite(join(dir, 'cache'), scratch);
    expect(opened.fromSnapshot).toBe(false);
    expect(await versions(opened.database)).toEqual(MIGRATIONS.map((m) => m.version));
    await opened.database.close();
  }, 60_000);

  it('opens without a cache it cannot write, or with none', async () => {
    const blocked = join(dir, 'a-file');
    writeFileSync(blocked, 'x');
    const unwritable = await openFreshPglite(join(blocked, 'cache'));
    expect(unwritable.fromSnapshot).toBe(false);
    expect(await versions(unwritable.database)).toHaveLength(MIGRATIONS.length);
    await unwritable.database.close();
    const none = await openFreshPglite(null);
    expect(none.fromSnapshot).toBe(false);
    await none.database.close();
    expect(readdirSync(dir)).toEqual(['a-file']);
  }, 60_000);
});
