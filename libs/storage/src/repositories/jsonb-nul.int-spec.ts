import { randomUUID } from 'node:crypto';
import { TEST_DATABASE_URL, dropTestSchemas } from '@fathom/testing';
import { openDatabase } from '../database/open-database';
import type { Database } from '../database/database';
import { RunEventRepository } from './run-event.repository';
import { RunReportRepository } from './run-report.repository';
import { RunRepository } from './run.repository';

const schema = `fathom_nul_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
afterAll(() => dropTestSchemas(schema));

describe.each([
  ['PGlite', () => openDatabase({ kind: 'pglite', dataDir: null })],
  ['PostgreSQL', () => openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL, schema })],
])('NUL in stored JSON (%s)', (_name, open) => {
  let db: Database;
  beforeAll(async () => {
    db = await open();
  });
  afterAll(() => db.close());

  it('stores an event holding \\u0000 (which jsonb refuses) and reads it back equal', async () => {
    const sut = new RunEventRepository(db);
    const payload = { reason: 'target said a\u0000b', ['k\u0000']: ['\u0000'], note: '%00 stays' };

    await expect(
      sut.appendMany([
        { eventId: 'nul-1', runId: 'run', topic: 't', kind: 'lifecycle', occurredAt: 1, payload },
      ]),
    ).resolves.toBe(1);

    expect((await sut.listByRun('run'))[0].payload).toEqual(payload);
  });

  it('stores a report document holding \\u0000 and reads it back equal', async () => {
    await db.query(`INSERT INTO campaigns (id, name, spec) VALUES ('c', 'c', '{}'::jsonb)`);
    await db.query(
      `INSERT INTO runs (id, campaign_id, status, trigger) VALUES ('run', 'c', 'running', 'api')`,
    );
    const sut = new RunReportRepository(db);
    const document = { summary: { reason: 'x\u0000y' } };

    await sut.save('run', document);

    expect((await sut.latest('run'))?.document).toEqual(document);
  });

  it('ends a run whose reason holds \\u0000 (text refuses it) with the NUL replaced', async () => {
    const sut = new RunRepository(db);

    await expect(sut.transition('run', 'failed', { reason: 'target said a\u0000b' })).resolves.toBe(true);

    expect(await sut.get('run')).toMatchObject({ status: 'failed', reason: 'target said a\uFFFDb' });
  });
});
