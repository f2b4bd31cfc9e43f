import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { openDatabase } from './database/open-database';
import { PostgresDatabase } from './database/postgres.database';
import { migrate } from './migrations/migrator';
import { MIGRATIONS } from './migrations/migrations';
import { RunRepository } from './repositories/run.repository';
import { describeStorageContract } from './storage.contract-suite';

/** The real server the tests and CI run against (trust auth). */
const TEST_DATABASE_URL = process.env.FATHOM_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** One schema per test file (and per use inside it), dropped at the end, so runs never collide. */
const schemaName = (purpose: string) => `fathom_${purpose}_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
const schemas: string[] = [];
const newSchema = (purpose: string) => {
  const schema = schemaName(purpose);
  schemas.push(schema);
  return schema;
};

afterAll(async () => {
  const client = new Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
});

describeStorageContract('PostgreSQL', () =>
  openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL, schema: newSchema('contract') }),
);

describe(PostgresDatabase.name, () => {
  it('keeps every pooled connection in its own schema', async () => {
    const schema = newSchema('pool');
    const sut = await PostgresDatabase.open({ url: TEST_DATABASE_URL, schema, maxConnections: 3 });
    try {
      // Five concurrent queries need more than one pooled connection.
      const rows = await Promise.all(
        Array.from({ length: 5 }, () =>
          sut.query<{ schema: string }>('SELECT current_schema() AS schema, pg_sleep(0.05)'),
        ),
      );
      expect(rows.map(([row]) => row.schema)).toEqual(Array(5).fill(schema));
      expect(
        await sut.transaction((tx) => tx.query<{ schema: string }>('SELECT current_schema() AS schema')),
      ).toEqual([{ schema }]);
    } finally {
      await sut.close();
    }
  });

  it('refuses a schema name that is not a plain identifier', async () => {
    await expect(
      PostgresDatabase.open({ url: TEST_DATABASE_URL, schema: 'x; DROP TABLE runs' }),
    ).rejects.toThrow(/invalid schema name/);
  });

  it('counts the plans of runs stored before migration 6 as published, so none goes out twice', async () => {
    const schema = newSchema('plans');
    const sut = await PostgresDatabase.open({ url: TEST_DATABASE_URL, schema });
    try {
      await migrate(sut, MIGRATIONS.slice(0, 5));
      await sut.query(`INSERT INTO campaigns (id, name, spec) VALUES ('c', 'old', '{}'::jsonb)`);
      await sut.query(
        `INSERT INTO runs (id, campaign_id, status, trigger, created_at, started_at) VALUES
           ('pending', 'c', 'pending', 'api', '2024-01-01T00:00:00Z', NULL),
           ('running', 'c', 'running', 'api', '2024-01-01T00:00:00Z', '2024-01-01T00:00:05Z')`,
      );

      // Migration 6 and the later ones are applied to a database left at 5.
      expect((await migrate(sut)).applied[0]).toBe(6);

      const runs = new RunRepository(sut);
      expect((await runs.get('pending'))?.planPublishedAt).toBe(Date.parse('2024-01-01T00:00:00Z'));
      expect((await runs.get('running'))?.planPublishedAt).toBe(Date.parse('2024-01-01T00:00:05Z'));
      expect(await runs.listOwedPlans()).toEqual([]);
    } finally {
      await sut.close();
    }
  });

  it('migrates once when two connections migrate the same schema at the same time', async () => {
    const schema = newSchema('race');
    const [first, second] = await Promise.all([
      PostgresDatabase.open({ url: TEST_DATABASE_URL, schema }),
      PostgresDatabase.open({ url: TEST_DATABASE_URL, schema }),
    ]);
    try {
      const results = await Promise.all([migrate(first), migrate(second)]);

      const applied = results.map((result) => result.applied).sort((a, b) => b.length - a.length);
      expect(applied).toEqual([MIGRATIONS.map((migration) => migration.version), []]);
      const rows = await first.query<{ version: number }>(
        'SELECT version FROM schema_migrations ORDER BY version',
      );
      expect(rows.map((row) => row.version)).toEqual(MIGRATIONS.map((migration) => migration.version));
      const [{ tables }] = await second.query<{ tables: number }>(
        `SELECT count(*)::integer AS tables FROM information_schema.tables
          WHERE table_schema = $1 AND table_name IN ('campaigns', 'runs', 'run_events', 'run_reports', 'baselines')`,
        [schema],
      );
      expect(tables).toBe(5);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});
