import { databaseConfigFromEnv } from './open-database';

describe(databaseConfigFromEnv.name, () => {
  const home = '/home/ada';

  it('uses PostgreSQL when DATABASE_URL is set, whatever FATHOM_DATA_DIR says', () => {
    expect(
      databaseConfigFromEnv(
        { DATABASE_URL: 'postgres://fathom@db:5432/fathom', FATHOM_DATA_DIR: '/data' },
        home,
      ),
    ).toEqual({ kind: 'postgres', url: 'postgres://fathom@db:5432/fathom' });
    expect(databaseConfigFromEnv({ DATABASE_URL: 'postgresql://db/fathom' }, home)).toEqual({
      kind: 'postgres',
      url: 'postgresql://db/fathom',
    });
  });

  it('puts PGlite in db/ under FATHOM_DATA_DIR', () => {
    expect(databaseConfigFromEnv({ FATHOM_DATA_DIR: '/var/lib/fathom' }, home)).toEqual({
      kind: 'pglite',
      dataDir: '/var/lib/fathom/db',
    });
  });

  it('defaults to ~/.fathom/db, treating empty variables as unset', () => {
    expect(databaseConfigFromEnv({}, home)).toEqual({ kind: 'pglite', dataDir: '/home/ada/.fathom/db' });
    expect(databaseConfigFromEnv({ DATABASE_URL: '', FATHOM_DATA_DIR: '' }, home)).toEqual({
      kind: 'pglite',
      dataDir: '/home/ada/.fathom/db',
    });
  });

  it('keeps PGlite in memory for FATHOM_DATA_DIR=memory://', () => {
    expect(databaseConfigFromEnv({ FATHOM_DATA_DIR: 'memory://' }, home)).toEqual({
      kind: 'pglite',
      dataDir: null,
      snapshotDir: '/home/ada/.cache/fathom',
    });
    expect(databaseConfigFromEnv({ FATHOM_DATA_DIR: 'memory://', FATHOM_CACHE_DIR: 'off' }, home)).toEqual({
      kind: 'pglite',
      dataDir: null,
      snapshotDir: null,
    });
  });

  it('names DATABASE_URL when it is not a PostgreSQL URL', () => {
    expect(() => databaseConfigFromEnv({ DATABASE_URL: 'mysql://db/fathom' }, home)).toThrow(/DATABASE_URL/);
  });
});
