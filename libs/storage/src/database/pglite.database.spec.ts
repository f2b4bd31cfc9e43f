import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRepositories } from '../repositories/repositories';
import { campaignSpec } from '../storage.contract-suite';
import { openDatabase } from './open-database';
import { PgliteDatabase } from './pglite.database';
import { MIGRATIONS } from '../migrations/migrations';

describe(PgliteDatabase.name, () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'fathom-pglite-'));
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('runs with a 16 MB buffer pool, so its WASM memory stays small however long a run lasts', async () => {
    const db = await PgliteDatabase.open(null);
    try {
      expect(await db.query('SHOW shared_buffers')).toEqual([{ shared_buffers: '16MB' }]);
      // Its WASM heap holds the pool and more, and is a whole number of 64 KiB pages.
      const heap = db.wasmHeapBytes();
      expect(heap).toBeGreaterThan(16 * 2 ** 20);
      expect(heap % 65_536).toBe(0);
    } finally {
      await db.close();
    }
  });

  it('checkpoints on its own, so the WAL of a long run is recycled instead of growing', async () => {
    /** Writes about 28 MB of WAL and returns the WAL's size in MiB after it. */
    const fill = async (db: PgliteDatabase) => {
      await db.query('CREATE TABLE filler (id int PRIMARY KEY, payload text)');
      for (let batch = 0; batch < 7; batch++) {
        await db.query(
          `INSERT INTO filler SELECT g, (SELECT string_agg(md5((g * 100 + k)::text), '') FROM generate_series(1, 100) k)
             FROM generate_series($1::int, $1::int + 1199) g`,
          [batch * 1200],
        );
        await new Promise((resolve) => setTimeout(resolve, 20)); // the timer's turn
      }
      return walMiB(db);
    };
    const walMiB = async (db: PgliteDatabase) =>
      Number((await db.query<{ s: string }>('SELECT sum(size)::bigint AS s FROM pg_ls_waldir()'))[0].s) /
      2 ** 20;

    const unattended = await PgliteDatabase.open(null, { checkpointEveryMs: 3_600_000 });
    try {
      expect(await fill(unattended)).toBeGreaterThan(32); // no checkpointer: the WAL only grows
      expect(await unattended.checkpoint()).toBe(true);
      expect(await walMiB(unattended)).toBeLessThanOrEqual(32);
    } finally {
      await unattended.close();
    }
    const ticking = await PgliteDatabase.open(null, { checkpointEveryMs: 50 });
    try {
      expect(await fill(ticking)).toBeLessThanOrEqual(32);
    } finally {
      await ticking.close();
    }
    expect(await ticking.checkpoint()).toBe(false); // closed: nothing to do, no throw
  }, 120_000);

  it('keeps what was written in its data directory across a close and reopen', async () => {
    // A directory that does not exist yet: opening creates it.
    const dataDir = join(root, 'nested', 'db');
    const first = await openDatabase({ kind: 'pglite', dataDir });
    const writer = createRepositories(first);
    const campaign = await writer.campaigns.create({ spec: campaignSpec({ name: 'persisted' }) });
    const run = await writer.runs.create({ campaignId: campaign.id, trigger: 'cli' });
    await writer.runs.transition(run.id, 'running', { at: 1_700_000_000_000 });
    await writer.runEvents.appendMany([
      {
        eventId: 'e1',
        runId: run.id,
        topic: 't.v1',
        kind: 'k',
        occurredAt: 1_700_000_000_001,
        payload: { n: 1 },
      },
    ]);
    await first.close();

    const reopened = await openDatabase({ kind: 'pglite', dataDir });
    try {
      const reader = createRepositories(reopened);
      expect(reopened.kind).toBe('pglite');
      expect(await reader.campaigns.get(campaign.id)).toEqual(campaign);
      expect(await reader.runs.get(run.id)).toMatchObject({
        status: 'running',
        startedAt: 1_700_000_000_000,
      });
      expect(await reader.runEvents.countByRun(run.id)).toBe(1);
      // Reopening found the schema current instead of migrating it again.
      const [{ migrations }] = await reopened.query<{ migrations: number }>(
        'SELECT count(*)::integer AS migrations FROM schema_migrations',
      );
      // Each migration recorded once: reopening applied none again.
      expect(migrations).toBe(MIGRATIONS.length);
    } finally {
      await reopened.close();
    }
  });
});
