import { randomUUID } from 'node:crypto';
import {
  CampaignSpecSchema,
  ShadowCampaignInputSchema,
  shadowRunId,
  type CampaignSpec,
  type RunStatus,
  type RunSummary,
  type ShadowSample,
} from '@fathom/contracts';
import type { Database } from './database/database';
import { migrate } from './migrations/migrator';
import { MIGRATIONS } from './migrations/migrations';
import { AlertRepository } from './repositories/alert.repository';
import { createRepositories, type StorageRepositories } from './repositories/repositories';
import { RerunRepository } from './repositories/rerun.repository';
import { ScheduleRepository } from './repositories/schedule.repository';
import { ShadowBreakerRepository, type StoredShadowBreaker } from './repositories/shadow-breaker.repository';
import { ShadowRepository } from './repositories/shadow.repository';
import { RunNotFoundError } from './repositories/run.repository';
import {
  PAGE_BY_RUN_SQL,
  RUN_EVENT_ROWS_PER_STATEMENT,
  type RunEventRecord,
} from './repositories/run-event.repository';

/**
 * The one repository suite, run against every backend (PGlite in `storage.pglite.spec.ts`,
 * PostgreSQL in `storage.postgres.int-spec.ts`). `open` returns a migrated database; it is
 * called once per file (PGlite takes about 2 s to start) and closed at the end. Tests share the
 * database, so each one works on ids of its own and never assumes the tables are empty.
 */
export function describeStorageContract(backend: string, open: () => Promise<Database>): void {
  describe(`storage contract (${backend})`, () => {
    let db: Database;
    let sut: StorageRepositories;

    beforeAll(async () => {
      db = await open();
      sut = createRepositories(db);
    });

    afterAll(async () => {
      await db?.close();
    });

    const uid = (prefix: string) => `${prefix}-${randomUUID()}`;
    const newCampaign = async (overrides: Partial<CampaignSpec> = {}) =>
      sut.campaigns.create({ spec: campaignSpec(overrides) });
    const newRun = async () => {
      const campaign = await newCampaign();
      return sut.runs.create({ campaignId: campaign.id, trigger: 'api' });
    };

    describe('migrations', () => {
      it('records every migration once and applies nothing when run again', async () => {
        const again = await migrate(db);
        expect(again).toEqual({ applied: [], version: MIGRATIONS.length });
        const rows = await db.query<{ version: number }>(
          'SELECT version FROM schema_migrations ORDER BY version',
        );
        expect(rows.map((row) => Number(row.version))).toEqual(
          MIGRATIONS.map((migration) => migration.version),
        );
      });
    });

    describe('transaction', () => {
      it('commits what the callback wrote when it resolves', async () => {
        const id = uid('tx-commit');
        await db.transaction(async (tx) => {
          await createRepositories(tx).campaigns.create({ id, spec: campaignSpec() });
        });
        expect(await sut.campaigns.get(id)).not.toBeNull();
      });

      it('rolls back and rethrows when the callback throws', async () => {
        const id = uid('tx-rollback');
        await expect(
          db.transaction(async (tx) => {
            await createRepositories(tx).campaigns.create({ id, spec: campaignSpec() });
            throw new Error('boom');
          }),
        ).rejects.toThrow('boom');
        expect(await sut.campaigns.get(id)).toBeNull();
      });
    });

    describe('CampaignRepository', () => {
      it('returns a created campaign with its spec, name and creation time', async () => {
        const spec = campaignSpec({ name: 'chat smoke' });
        const created = await sut.campaigns.create({ spec, createdAt: 1_700_000_000_123 });

        const got = await sut.campaigns.get(created.id);

        expect(got).toEqual({ id: created.id, name: 'chat smoke', spec, createdAt: 1_700_000_000_123 });
      });

      it('stamps the creation time with the database clock by default', async () => {
        const before = Date.now();
        const created = await sut.campaigns.create({ spec: campaignSpec() });
        // Allow for a little skew between this process and the server's clock.
        expect(created.createdAt).toBeGreaterThanOrEqual(before - 5_000);
        expect(created.createdAt).toBeLessThanOrEqual(Date.now() + 5_000);
      });

      it('returns null for an unknown id', async () => {
        expect(await sut.campaigns.get(uid('missing'))).toBeNull();
      });

      it('refuses a spec the contract rejects and stores nothing', async () => {
        const id = uid('bad-spec');
        const spec = { ...campaignSpec(), load: { ...campaignSpec().load, concurrency: -1 } };
        await expect(sut.campaigns.create({ id, spec })).rejects.toThrow();
        expect(await sut.campaigns.get(id)).toBeNull();
      });

      it('lists campaigns newest first', async () => {
        // Far-future creation times put these above anything the other tests created.
        const older = await sut.campaigns.create({ spec: campaignSpec(), createdAt: 4_000_000_000_000 });
        const newer = await sut.campaigns.create({ spec: campaignSpec(), createdAt: 4_000_000_000_001 });

        const listed = await sut.campaigns.list({ limit: 2 });

        expect(listed.map((campaign) => campaign.id)).toEqual([newer.id, older.id]);
      });
    });

    describe('RunRepository', () => {
      it('creates a run in pending with no start, end or summary', async () => {
        const campaign = await newCampaign();

        const run = await sut.runs.create({
          campaignId: campaign.id,
          trigger: 'cli',
          createdAt: 1_700_000_000_000,
        });

        expect(run).toEqual({
          id: expect.any(String),
          campaignId: campaign.id,
          status: 'pending',
          trigger: 'cli',
          parentRunId: null,
          reason: null,
          createdAt: 1_700_000_000_000,
          startedAt: null,
          endedAt: null,
          summary: null,
          planPublishedAt: null,
        });
        expect(await sut.runs.get(run.id)).toEqual(run);
      });

      it('links a rerun to its parent run with the reason', async () => {
        const parent = await newRun();

        const rerun = await sut.runs.create({
          campaignId: parent.campaignId,
          trigger: 'rerun',
          parentRunId: parent.id,
          reason: 'tier SLO-0 -> SLO-1',
        });

        expect(await sut.runs.get(rerun.id)).toMatchObject({
          trigger: 'rerun',
          parentRunId: parent.id,
          reason: 'tier SLO-0 -> SLO-1',
        });
      });

      it('refuses a run of an unknown campaign', async () => {
        await expect(sut.runs.create({ campaignId: uid('no-campaign'), trigger: 'api' })).rejects.toThrow();
      });

      it('returns null for an unknown id', async () => {
        expect(await sut.runs.get(uid('missing'))).toBeNull();
      });

      it('lists runs by campaign, by status, or both, newest first', async () => {
        const campaign = await newCampaign();
        const other = await newCampaign();
        const first = await sut.runs.create({ campaignId: campaign.id, trigger: 'api', createdAt: 1_000 });
        const second = await sut.runs.create({ campaignId: campaign.id, trigger: 'api', createdAt: 2_000 });
        const elsewhere = await sut.runs.create({ campaignId: other.id, trigger: 'api' });
        await sut.runs.transition(second.id, 'running');
        await sut.runs.transition(elsewhere.id, 'running');

        const ids = (runs: { id: string }[]) => runs.map((run) => run.id);
        expect(ids(await sut.runs.list({ campaignId: campaign.id }))).toEqual([second.id, first.id]);
        expect(ids(await sut.runs.list({ campaignId: campaign.id, status: 'pending' }))).toEqual([first.id]);
        expect(ids(await sut.runs.list({ campaignId: campaign.id, status: ['pending', 'running'] }))).toEqual(
          [second.id, first.id],
        );
        expect(ids(await sut.runs.list({ campaignId: campaign.id, limit: 1 }))).toEqual([second.id]);
        const running = ids(await sut.runs.list({ status: 'running' }));
        expect(running).toEqual(expect.arrayContaining([second.id, elsewhere.id]));
        expect(running).not.toContain(first.id);
        expect(await sut.runs.list({ campaignId: campaign.id, status: [] })).toEqual([]);
      });

      it("tallies a campaign's runs for the rerun policy: reruns, open ones, the latest end", async () => {
        const campaign = await newCampaign();
        const other = await newCampaign();
        expect(await sut.runs.tally(campaign.id)).toEqual({
          reruns: 0,
          openReruns: 0,
          unended: 0,
          lastEndedAt: null,
        });
        const first = await sut.runs.create({ campaignId: campaign.id, trigger: 'api' });
        await sut.runs.transition(first.id, 'running', { at: 1_700_000_000_000 });
        await sut.runs.transition(first.id, 'completed', { at: 1_700_000_003_000 });
        const rerun = await sut.runs.create({ campaignId: campaign.id, trigger: 'rerun' });
        await sut.runs.transition(rerun.id, 'running', { at: 1_700_000_004_000 });
        await sut.runs.transition(rerun.id, 'completed', { at: 1_700_000_009_000 });
        const third = await sut.runs.create({ campaignId: campaign.id, trigger: 'api' });
        await sut.runs.transition(third.id, 'aborted', { at: 1_700_000_005_000 });
        const elsewhere = await sut.runs.create({ campaignId: other.id, trigger: 'rerun' });
        await sut.runs.transition(elsewhere.id, 'running');

        expect(await sut.runs.tally(campaign.id)).toEqual({
          reruns: 1,
          openReruns: 0,
          unended: 0,
          lastEndedAt: 1_700_000_009_000,
        });
        const open = await sut.runs.create({ campaignId: campaign.id, trigger: 'rerun' });
        expect(await sut.runs.tally(campaign.id)).toEqual({
          reruns: 2,
          openReruns: 1,
          unended: 1,
          lastEndedAt: 1_700_000_009_000,
        });
        await sut.runs.transition(open.id, 'running');
        expect((await sut.runs.tally(campaign.id)).openReruns).toBe(1);
        expect(await sut.runs.tally(other.id)).toMatchObject({ reruns: 1, openReruns: 1, unended: 1 });
      });

      it('stamps startedAt on running and endedAt and the reason on an end state', async () => {
        const run = await newRun();

        expect(await sut.runs.transition(run.id, 'running', { at: 1_700_000_001_000 })).toBe(true);
        expect(
          await sut.runs.transition(run.id, 'failed', {
            at: 1_700_000_009_500,
            reason: 'target unreachable',
          }),
        ).toBe(true);

        expect(await sut.runs.get(run.id)).toMatchObject({
          status: 'failed',
          startedAt: 1_700_000_001_000,
          endedAt: 1_700_000_009_500,
          reason: 'target unreachable',
        });
      });

      it('ends a run that never started without giving it a start time', async () => {
        const run = await newRun();

        expect(
          await sut.runs.transition(run.id, 'aborted', { at: 1_700_000_002_000, reason: 'cancelled' }),
        ).toBe(true);

        expect(await sut.runs.get(run.id)).toMatchObject({
          status: 'aborted',
          startedAt: null,
          endedAt: 1_700_000_002_000,
          reason: 'cancelled',
        });
      });

      // The lifecycle from the brief, spelled out here rather than read from RUN_TRANSITIONS so
      // that a wrong table in the code fails this test.
      const legal = new Set([
        'pending->running',
        'pending->failed',
        'pending->aborted',
        'running->completed',
        'running->partial',
        'running->failed',
        'running->aborted',
      ]);
      const statuses: RunStatus[] = ['pending', 'running', 'completed', 'partial', 'failed', 'aborted'];
      const pathTo: Record<RunStatus, RunStatus[]> = {
        pending: [],
        running: ['running'],
        completed: ['running', 'completed'],
        partial: ['running', 'partial'],
        failed: ['running', 'failed'],
        aborted: ['aborted'],
      };

      it('allows exactly the lifecycle moves and leaves a refused run unchanged', async () => {
        const campaign = await newCampaign();
        const outcomes: string[] = [];
        for (const from of statuses) {
          for (const to of statuses) {
            const run = await sut.runs.create({ campaignId: campaign.id, trigger: 'api' });
            for (const step of pathTo[from]) await sut.runs.transition(run.id, step);
            const before = await sut.runs.get(run.id);
            expect(before?.status).toBe(from);

            const changed = await sut.runs.transition(run.id, to, { reason: 'probe' });

            const after = await sut.runs.get(run.id);
            if (changed) {
              outcomes.push(`${from}->${to}`);
              expect(after?.status).toBe(to);
            } else {
              expect(after).toEqual(before);
            }
          }
        }
        expect(new Set(outcomes)).toEqual(legal);
      });

      it('lets only one of two racing transitions win', async () => {
        const run = await newRun();
        await sut.runs.transition(run.id, 'running');

        const results = await Promise.all([
          sut.runs.transition(run.id, 'completed'),
          sut.runs.transition(run.id, 'aborted'),
        ]);

        expect(results.filter(Boolean)).toHaveLength(1);
        const winner = results[0] ? 'completed' : 'aborted';
        expect((await sut.runs.get(run.id))?.status).toBe(winner);
      });

      it('makes a second transaction taking the same campaign lock wait for the first to commit', async () => {
        const campaign = await newCampaign();
        let locked!: () => void;
        const firstHoldsLock = new Promise<void>((resolve) => (locked = resolve));
        const first = db.transaction(async (tx) => {
          const runs = createRepositories(tx).runs;
          await runs.lockCampaign(campaign.id);
          locked();
          // Long enough for the second transaction to reach its lock while this one holds it.
          await new Promise((resolve) => setTimeout(resolve, 300));
          await runs.create({ campaignId: campaign.id, trigger: 'alert' });
        });
        await firstHoldsLock;

        const openSeenBySecond = await db.transaction(async (tx) => {
          const runs = createRepositories(tx).runs;
          await runs.lockCampaign(campaign.id);
          return (await runs.list({ campaignId: campaign.id, status: ['pending', 'running'] })).length;
        });
        await first;

        expect(openSeenBySecond).toBe(1);
      });

      const owedIds = async () => (await sut.runs.listOwedPlans(100_000)).map((owed) => owed.id);

      it("owes a new run's plan until a claim commits; a claim rolled back leaves it owed", async () => {
        const run = await newRun();
        expect(await owedIds()).toContain(run.id);

        await expect(
          db.transaction(async (tx) => {
            expect(await createRepositories(tx).runs.claimPlan(run.id)).not.toBeNull();
            throw new Error('bus down');
          }),
        ).rejects.toThrow('bus down');
        expect((await sut.runs.get(run.id))?.planPublishedAt).toBeNull();
        expect(await owedIds()).toContain(run.id);

        const before = Date.now();
        const claimed = await db.transaction((tx) => createRepositories(tx).runs.claimPlan(run.id));
        expect(claimed).toMatchObject({ id: run.id, status: 'pending' });
        expect(claimed?.planPublishedAt).toBeGreaterThanOrEqual(before - 5_000);
        expect(await sut.runs.get(run.id)).toEqual(claimed);
        expect(await owedIds()).not.toContain(run.id);
        expect(await db.transaction((tx) => createRepositories(tx).runs.claimPlan(run.id))).toBeNull();
      });

      it('gives an owed plan to one of two transactions claiming it at once', async () => {
        const run = await newRun();
        let claimedFirst!: () => void;
        const firstHoldsClaim = new Promise<void>((resolve) => (claimedFirst = resolve));
        const first = db.transaction(async (tx) => {
          const claimed = await createRepositories(tx).runs.claimPlan(run.id);
          claimedFirst();
          // Publishing: long enough for the second claim to arrive while this one is open.
          await new Promise((resolve) => setTimeout(resolve, 300));
          return claimed;
        });
        await firstHoldsClaim;
        const second = await db.transaction((tx) => createRepositories(tx).runs.claimPlan(run.id));

        expect(await first).not.toBeNull();
        expect(second).toBeNull();
        expect((await sut.runs.get(run.id))?.planPublishedAt).not.toBeNull();
      });

      it('owes no plan for a run that left pending', async () => {
        const run = await newRun();
        await sut.runs.transition(run.id, 'aborted', { reason: 'cancelled' });

        expect(await owedIds()).not.toContain(run.id);
        expect(await db.transaction((tx) => createRepositories(tx).runs.claimPlan(run.id))).toBeNull();
        expect((await sut.runs.get(run.id))?.planPublishedAt).toBeNull();
      });

      it('throws RunNotFoundError when transitioning an unknown run', async () => {
        await expect(sut.runs.transition(uid('missing'), 'running')).rejects.toBeInstanceOf(RunNotFoundError);
      });

      it('stores the summary and returns it parsed', async () => {
        const run = await newRun();
        const summary = runSummary();

        await sut.runs.saveSummary(run.id, summary);

        expect((await sut.runs.get(run.id))?.summary).toEqual(summary);
      });

      it('refuses a summary for an unknown run', async () => {
        await expect(sut.runs.saveSummary(uid('missing'), runSummary())).rejects.toBeInstanceOf(
          RunNotFoundError,
        );
      });
    });

    describe('RunEventRepository', () => {
      const event = (runId: string, n: number, overrides: Partial<RunEventRecord> = {}): RunEventRecord => ({
        eventId: `${runId}:${n}`,
        runId,
        topic: 'fathom.run.lifecycle.v1',
        kind: 'shard-finished',
        occurredAt: 1_700_000_000_000 + n,
        payload: { n, counts: { sent: n * 10, errors: 0 }, tags: ['a', 'b'], note: null },
        ...overrides,
      });

      it('stores events and returns them oldest first with their payloads', async () => {
        const runId = uid('run');
        const events = [event(runId, 2), event(runId, 0), event(runId, 1)];

        expect(await sut.runEvents.appendMany(events)).toBe(3);

        expect(await sut.runEvents.listByRun(runId)).toEqual([events[1], events[2], events[0]]);
      });

      it('counts an event delivered again as not new', async () => {
        const runId = uid('run');
        const first = [event(runId, 0), event(runId, 1)];
        await sut.runEvents.appendMany(first);

        expect(await sut.runEvents.appendMany(first)).toBe(0);
        expect(await sut.runEvents.appendMany([event(runId, 1), event(runId, 2)])).toBe(1);
        expect(await sut.runEvents.countByRun(runId)).toBe(3);
      });

      it('keeps the first copy of an event id repeated within one batch', async () => {
        const runId = uid('run');
        const original = event(runId, 0);
        const redelivered = { ...original, kind: 'shard-failed', payload: { changed: true } };

        expect(await sut.runEvents.appendMany([original, redelivered, event(runId, 1)])).toBe(2);

        expect((await sut.runEvents.listByRun(runId))[0]).toEqual(original);
      });

      it('filters by topic when listing and counting', async () => {
        const runId = uid('run');
        await sut.runEvents.appendMany([
          event(runId, 0),
          event(runId, 1, { topic: 'fathom.state.slo-tier.v1', kind: 'tier-changed' }),
          event(runId, 2),
        ]);

        const tiers = await sut.runEvents.listByRun(runId, { topic: 'fathom.state.slo-tier.v1' });

        expect(tiers.map((stored) => stored.eventId)).toEqual([`${runId}:1`]);
        expect(await sut.runEvents.countByRun(runId, { topic: 'fathom.run.lifecycle.v1' })).toBe(2);
        expect(await sut.runEvents.listByRun(runId, { limit: 2 })).toHaveLength(2);
      });

      it('filters by kind when listing and counting', async () => {
        const runId = uid('run');
        await sut.runEvents.appendMany([
          event(runId, 0),
          event(runId, 1, { topic: 'fathom.state.slo-tier.v1', kind: 'tier-changed' }),
          event(runId, 2, { topic: 'fathom.state.slo-tier.v1', kind: 'tier-assigned' }),
        ]);

        const changed = await sut.runEvents.listByRun(runId, { kind: 'tier-changed' });

        expect(changed.map((stored) => stored.eventId)).toEqual([`${runId}:1`]);
        expect(
          await sut.runEvents.countByRun(runId, { topic: 'fathom.state.slo-tier.v1', kind: 'tier-assigned' }),
        ).toBe(1);
      });

      it('sums the items of batched events of one kind, counted by the database', async () => {
        const runId = uid('run');
        await sut.runEvents.appendMany([
          event(runId, 0, { kind: 'token-stats', payload: { stats: [{ a: 1 }, { a: 2 }, { a: 3 }] } }),
          event(runId, 1, { kind: 'token-stats', payload: { stats: [{ a: 4 }] } }),
          event(runId, 2, { kind: 'token-stats', payload: { stats: 'not an array' } }),
          event(runId, 3, { kind: 'semantic', payload: { stats: [{ a: 5 }] } }),
        ]);

        expect(await sut.runEvents.countItemsByRun(runId, 'token-stats', 'stats')).toBe(4);
        expect(await sut.runEvents.countItemsByRun(uid('missing'), 'token-stats', 'stats')).toBe(0);
      });

      it('reads a run in pages of its listing order, ties on time broken by id, without gaps or repeats', async () => {
        const runId = uid('run');
        // Three events share each millisecond, stored out of order: the keyset must split ties.
        const events = Array.from({ length: 17 }, (_, n) =>
          event(runId, n, {
            eventId: `${runId}:${String.fromCharCode(97 + ((n * 7) % 17))}`,
            occurredAt: 1_700_000_000_000 + Math.floor(n / 3),
            kind: n % 4 === 0 ? 'token-stats' : 'window',
          }),
        );
        await sut.runEvents.appendMany([...events].reverse());
        await sut.runEvents.appendMany([event(uid('other'), 0)]);
        const listed = await sut.runEvents.listByRun(runId);

        for (const pageSize of [1, 2, 3, 7, 17, 100]) {
          const pages: RunEventRecord[][] = [];
          for await (const page of sut.runEvents.pagesByRun(runId, { pageSize })) pages.push(page);
          expect(pages.flat()).toEqual(listed);
          expect(pages.every((p) => p.length <= pageSize)).toBe(true);
          expect(pages).toHaveLength(Math.ceil(17 / pageSize));
        }
        const windows: RunEventRecord[] = [];
        for await (const page of sut.runEvents.pagesByRun(runId, { kinds: ['window'], pageSize: 4 }))
          windows.push(...page);
        expect(windows).toEqual(await sut.runEvents.listByRun(runId, { kind: 'window' }));
        expect(windows).toHaveLength(12);
        const some: RunEventRecord[] = [];
        for await (const page of sut.runEvents.pagesByRun(runId, {
          kinds: ['window', 'token-stats'],
          pageSize: 5,
        }))
          some.push(...page);
        expect(some).toEqual(listed);
        const none: RunEventRecord[] = [];
        for await (const page of sut.runEvents.pagesByRun(runId, { kinds: [], pageSize: 5 }))
          none.push(...page);
        expect(none).toEqual([]);
      });

      it('reads no page of an unknown run and refuses a page size that is not a positive integer', async () => {
        const pages: RunEventRecord[][] = [];
        for await (const page of sut.runEvents.pagesByRun(uid('missing'), { pageSize: 5 })) pages.push(page);
        expect(pages).toEqual([]);
        for (const limit of [0, -1, 2.5, Number.NaN])
          await expect(sut.runEvents.pageByRun(uid('run'), { limit })).rejects.toThrow(
            /page size must be a positive integer/,
          );
      });

      it("keeps the planner's statistics fresh, so a page is an index scan of its own rows", async () => {
        const runId = uid('run');
        const pages = async () =>
          Number(
            (
              await db.query<{ pages: number }>(
                `SELECT (pg_relation_size('run_events') / current_setting('block_size')::integer)::float8 AS pages`,
              )
            )[0].pages,
          );
        const analyzed = async () =>
          Number(
            (
              await db.query<{ n: number }>(
                `SELECT relpages::float8 AS n FROM pg_class WHERE oid = 'run_events'::regclass`,
              )
            )[0].n,
          );
        // Events of ~1.2 KB (a semantic signal is ~850 B) until the table is past 1 MB and a
        // quarter past what its statistics last saw.
        const filler = Array.from({ length: 33 }, () => randomUUID()).join('');
        let n = 0;
        const grow = async () => {
          const target = Math.max(160, (await analyzed()) * 1.3);
          while ((await pages()) < target) {
            await sut.runEvents.appendMany(
              Array.from({ length: 500 }, () =>
                event(runId, n++, { kind: 'semantic', payload: { filler, n } }),
              ),
            );
          }
        };
        await grow();
        expect(n).toBeGreaterThan(0);
        expect(await sut.runEvents.refreshStatistics()).toBe(true);
        expect(await analyzed()).toBeGreaterThan(0);
        expect(await sut.runEvents.refreshStatistics()).toBe(false);
        await grow();
        expect(await sut.runEvents.refreshStatistics()).toBe(true);

        const cursor = (await sut.runEvents.pageByRun(runId, { limit: Math.floor(n / 10) })).pop()!;
        const [plan] = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${PAGE_BY_RUN_SQL}`, [
          runId,
          null,
          ['semantic'],
          new Date(cursor.occurredAt).toISOString(),
          cursor.eventId,
          200,
        ]);
        const text = JSON.stringify(plan['QUERY PLAN']);
        expect(text).toContain('"Index Scan"');
        expect(text).not.toContain('Bitmap Heap Scan');
      }, 120_000);

      it('prunes a run to its newest events by event time and leaves other runs alone', async () => {
        const runId = uid('run');
        const other = uid('run');
        // Stored out of order: event time decides what is newest, not insertion.
        await sut.runEvents.appendMany([4, 0, 3, 1, 2].map((n) => event(runId, n)));
        await sut.runEvents.appendMany([event(other, 0)]);

        expect(await sut.runEvents.pruneRun(runId, 2)).toBe(3);
        expect(await sut.runEvents.pruneRun(runId, 2)).toBe(0);

        expect((await sut.runEvents.listByRun(runId)).map((e) => e.eventId)).toEqual([
          `${runId}:3`,
          `${runId}:4`,
        ]);
        expect(await sut.runEvents.countByRun(other)).toBe(1);
      });

      it('does nothing for an empty batch and counts zero for an unknown run', async () => {
        expect(await sut.runEvents.appendMany([])).toBe(0);
        expect(await sut.runEvents.countByRun(uid('missing'))).toBe(0);
        expect(await sut.runEvents.listByRun(uid('missing'))).toEqual([]);
      });

      it('stores a batch larger than one statement holds, and only once', async () => {
        const runId = uid('run');
        const total = RUN_EVENT_ROWS_PER_STATEMENT + 1;
        const events = Array.from({ length: total }, (_, n) => event(runId, n, { payload: { n } }));

        expect(await sut.runEvents.appendMany(events)).toBe(total);
        expect(await sut.runEvents.appendMany(events)).toBe(0);
        expect(await sut.runEvents.countByRun(runId)).toBe(total);
      });
    });

    describe('RunReportRepository', () => {
      it('numbers reports 1, 2, ... and returns the latest and any version', async () => {
        const run = await newRun();

        const first = await sut.runReports.save(run.id, { verdict: 'draft', findings: [] });
        const second = await sut.runReports.save(run.id, {
          verdict: 'final',
          findings: ['kv cache saturated'],
        });

        expect([first.version, second.version]).toEqual([1, 2]);
        expect(await sut.runReports.latest(run.id)).toEqual(second);
        expect(await sut.runReports.get(run.id, 1)).toEqual(first);
        expect(first.document).toEqual({ verdict: 'draft', findings: [] });
        expect(await sut.runReports.get(run.id, 3)).toBeNull();
      });

      it('gives concurrent saves for one run distinct versions', async () => {
        const run = await newRun();

        const saved = await Promise.all([1, 2, 3, 4].map((n) => sut.runReports.save(run.id, { n })));

        expect(saved.map((report) => report.version).sort()).toEqual([1, 2, 3, 4]);
        expect((await sut.runReports.latest(run.id))?.version).toBe(4);
      });

      it('returns null for a run without reports and refuses a report for an unknown run', async () => {
        const run = await newRun();
        expect(await sut.runReports.latest(run.id)).toBeNull();
        await expect(sut.runReports.save(uid('missing'), { n: 1 })).rejects.toBeInstanceOf(RunNotFoundError);
      });
    });

    describe('BaselineRepository', () => {
      it('returns the newest baseline of a campaign, optionally of one name', async () => {
        const campaign = await newCampaign();
        const latency = await sut.baselines.save({
          campaignId: campaign.id,
          name: 'latency',
          data: { p99Ms: 640 },
          createdAt: 1_000,
        });
        const tokens = await sut.baselines.save({
          campaignId: campaign.id,
          name: 'tokens',
          data: { meanOutputTokens: 212.5 },
          createdAt: 2_000,
        });

        expect(await sut.baselines.latestForCampaign(campaign.id)).toEqual(tokens);
        expect(await sut.baselines.latestForCampaign(campaign.id, { name: 'latency' })).toEqual(latency);
        expect(latency).toMatchObject({
          campaignId: campaign.id,
          name: 'latency',
          data: { p99Ms: 640 },
          createdAt: 1_000,
        });
      });

      it('keeps one baseline of a name per run and finds it by run', async () => {
        const campaign = await newCampaign();
        const run = await newRun();
        const first = await sut.baselines.save({
          campaignId: campaign.id,
          name: 'semantic-responses',
          runId: run.id,
          data: { items: 3 },
        });
        const again = await sut.baselines.save({
          campaignId: campaign.id,
          name: 'semantic-responses',
          runId: run.id,
          data: { items: 99 },
        });
        const other = await sut.baselines.save({
          campaignId: campaign.id,
          name: 'latency',
          runId: run.id,
          data: {},
        });

        expect(again).toEqual(first);
        expect(first.runId).toBe(run.id);
        expect(await sut.baselines.forRun(run.id, 'semantic-responses')).toEqual(first);
        expect(await sut.baselines.forRun(run.id, 'latency')).toEqual(other);
        expect(await sut.baselines.forRun(uid('no-run'), 'semantic-responses')).toBeNull();
      });

      it('returns null for a campaign without baselines', async () => {
        const campaign = await newCampaign();
        expect(await sut.baselines.latestForCampaign(campaign.id)).toBeNull();
      });

      it('refuses a baseline of an unknown campaign', async () => {
        await expect(
          sut.baselines.save({ campaignId: uid('no-campaign'), name: 'latency', data: {} }),
        ).rejects.toThrow();
      });
    });

    describe('AlertRepository', () => {
      const firing = (ruleId: string) => ({
        groupKey: uid('group'),
        fingerprint: 'f1',
        startsAt: '2026-01-01T00:00:00Z',
        ruleId,
      });

      it('stores a rule with its matchers and lists it', async () => {
        const campaign = await newCampaign();
        const alerts = new AlertRepository(db);
        const rule = await alerts.createRule({
          name: 'p99 high',
          matchLabels: { alertname: 'LlmP99High', service: 'chat' },
          campaignId: campaign.id,
        });

        const listed = (await alerts.listRules()).find((r) => r.id === rule.id);

        expect(listed).toEqual({
          id: rule.id,
          name: 'p99 high',
          matchLabels: { alertname: 'LlmP99High', service: 'chat' },
          campaignId: campaign.id,
          createdAt: rule.createdAt,
        });
      });

      it('refuses a rule of an unknown campaign', async () => {
        await expect(
          new AlertRepository(db).createRule({
            name: 'orphan',
            matchLabels: { a: 'b' },
            campaignId: uid('no-campaign'),
          }),
        ).rejects.toThrow();
      });

      it('claims a firing episode once, and again only after the claim was released', async () => {
        const alerts = new AlertRepository(db);
        const rule = await alerts.createRule({
          name: 'r',
          matchLabels: { a: 'b' },
          campaignId: (await newCampaign()).id,
        });
        const key = firing(rule.id);

        const claims = await Promise.all([alerts.claimFiring(key), alerts.claimFiring(key)]);
        expect(claims.filter(Boolean)).toHaveLength(1);
        expect(await alerts.claimFiring(key)).toBe(false);

        await alerts.releaseClaim(key);
        expect(await alerts.claimFiring(key)).toBe(true);
      });

      it('links claims to runs, counts the firing holders and returns the runs a resolve ends', async () => {
        const alerts = new AlertRepository(db);
        const run = await newRun();
        const rule = await alerts.createRule({
          name: 'r',
          matchLabels: { a: 'b' },
          campaignId: run.campaignId,
        });
        const started = firing(rule.id);
        const joined = { ...started, startsAt: '2026-01-01T00:05:00Z' };
        await alerts.claimFiring(started);
        await alerts.claimFiring(joined);

        expect(await alerts.linkRun(started, run.id)).toBe('firing');
        expect(await alerts.linkRun(joined, run.id, { coalesced: true })).toBe('firing');
        expect(await alerts.firingHolders(run.id)).toBe(2);

        expect(await alerts.resolve(started.groupKey, started.fingerprint)).toEqual([run.id, run.id]);
        expect(await alerts.firingHolders(run.id)).toBe(0);
        expect(await alerts.resolve(started.groupKey, started.fingerprint)).toEqual([]);
        // A claim resolved before its run was linked says so.
        expect(await alerts.linkRun(started, run.id)).toBe('resolved');
      });

      it('deletes an unused rule, keeps one that fired, and says false for an unknown one', async () => {
        const alerts = new AlertRepository(db);
        const campaignId = (await newCampaign()).id;
        const unused = await alerts.createRule({ name: 'unused', matchLabels: { a: 'b' }, campaignId });
        const fired = await alerts.createRule({ name: 'fired', matchLabels: { a: 'b' }, campaignId });
        await alerts.claimFiring(firing(fired.id));

        expect(await alerts.deleteRule(unused.id)).toBe(true);
        expect(await alerts.deleteRule(fired.id)).toBe(false);
        expect(await alerts.deleteRule(uid('no-rule'))).toBe(false);
        const ids = (await alerts.listRules()).map((r) => r.id);
        expect(ids).toContain(fired.id);
        expect(ids).not.toContain(unused.id);
      });
    });

    describe('ScheduleRepository', () => {
      it('creates an enabled schedule due at its start and finds it by id and in the list', async () => {
        const schedules = new ScheduleRepository(db);
        const campaign = await newCampaign();
        const created = await schedules.create({
          campaignId: campaign.id,
          mode: 'interval',
          intervalMs: 60_000,
          startAt: 1_700_000_000_000,
        });

        expect(created).toMatchObject({
          campaignId: campaign.id,
          mode: 'interval',
          intervalMs: 60_000,
          enabled: true,
          nextRunAt: 1_700_000_000_000,
          lastRunId: null,
        });
        expect(await schedules.get(created.id)).toEqual(created);
        expect((await schedules.list()).map((s) => s.id)).toContain(created.id);
        expect(await schedules.get(uid('no-schedule'))).toBeNull();
      });

      it('starts at `now` when no start is given', async () => {
        const schedules = new ScheduleRepository(db);
        const created = await schedules.create(
          { campaignId: (await newCampaign()).id, mode: 'always-on', intervalMs: 0 },
          1_700_000_123_000,
        );
        expect(created.nextRunAt).toBe(1_700_000_123_000);
      });

      it('lists a schedule as due from its slot on, and not once disabled', async () => {
        const schedules = new ScheduleRepository(db);
        const at = 1_600_000_000_000 + Math.floor(Math.random() * 1e9);
        const created = await schedules.create({
          campaignId: (await newCampaign()).id,
          mode: 'interval',
          intervalMs: 1000,
          startAt: at,
        });
        const dueIds = async (now: number) => (await schedules.due(now)).map((s) => s.id);

        expect(await dueIds(at - 1)).not.toContain(created.id);
        expect(await dueIds(at)).toContain(created.id);
        expect(await schedules.disable(created.id)).toBe(true);
        expect(await dueIds(at)).not.toContain(created.id);
        expect(await schedules.disable(uid('no-schedule'))).toBe(false);
      });

      it('advances a slot for one of two racing callers only, and records the last run', async () => {
        const schedules = new ScheduleRepository(db);
        const run = await newRun();
        const created = await schedules.create({
          campaignId: run.campaignId,
          mode: 'interval',
          intervalMs: 1000,
          startAt: 1_700_000_000_000,
        });

        const moves = await Promise.all([
          schedules.advance(created.id, 1_700_000_000_000, 1_700_000_001_000),
          schedules.advance(created.id, 1_700_000_000_000, 1_700_000_001_000),
        ]);
        await schedules.setLastRun(created.id, run.id);

        expect(moves.filter(Boolean)).toHaveLength(1);
        expect(await schedules.get(created.id)).toMatchObject({
          nextRunAt: 1_700_000_001_000,
          lastRunId: run.id,
        });
      });
    });

    describe('RerunRepository', () => {
      it('keeps the first rerun request of a run and hands its reason to one taker', async () => {
        const reruns = new RerunRepository(db);
        const parent = await newRun();

        expect(await reruns.request(parent.id, 'p99 over budget')).toBe(true);
        expect(await reruns.request(parent.id, 'error rate')).toBe(false);
        const taken = await Promise.all([reruns.takeRequest(parent.id), reruns.takeRequest(parent.id)]);

        expect(taken.filter((r) => r !== null)).toEqual(['p99 over budget']);
        expect(await reruns.takeRequest(parent.id)).toBeNull();
      });

      it('refuses a request for an unknown run', async () => {
        await expect(new RerunRepository(db).request(uid('no-run'), 'x')).rejects.toThrow();
      });

      it('schedules at most one waiting rerun per campaign and lists it until claimed', async () => {
        const reruns = new RerunRepository(db);
        const parent = await newRun();
        const rerun = { campaignId: parent.campaignId, parentRunId: parent.id, reason: 'regression' };

        const first = await reruns.schedule({ ...rerun, dueAt: 1_700_000_000_000 });
        expect(first).toEqual({
          id: first!.id,
          ...rerun,
          dueAt: 1_700_000_000_000,
          status: 'scheduled',
          runId: null,
        });
        expect(await reruns.schedule({ ...rerun, dueAt: 1_700_000_005_000 })).toBeNull();
        expect(await reruns.hasWaiting(parent.campaignId)).toBe(true);
        expect((await reruns.waiting()).map((r) => r.id)).toContain(first!.id);
        expect(await reruns.get(first!.id)).toEqual(first);
        expect(await reruns.get(uid('no-rerun'))).toBeNull();
      });

      it('lets one of two claims start a waiting rerun, after which the campaign may wait again', async () => {
        const reruns = new RerunRepository(db);
        const parent = await newRun();
        const rerun = { campaignId: parent.campaignId, parentRunId: parent.id, reason: 'regression' };
        const waiting = (await reruns.schedule({ ...rerun, dueAt: 1_700_000_000_000 }))!;
        const child = await sut.runs.create({ campaignId: parent.campaignId, trigger: 'api' });
        const other = await sut.runs.create({ campaignId: parent.campaignId, trigger: 'api' });

        const claims = await Promise.all([
          reruns.claim(waiting.id, child.id),
          reruns.claim(waiting.id, other.id),
        ]);

        expect(claims.filter(Boolean)).toHaveLength(1);
        const started = await reruns.get(waiting.id);
        expect(started?.status).toBe('started');
        expect([child.id, other.id]).toContain(started?.runId);
        expect(await reruns.hasWaiting(parent.campaignId)).toBe(false);
        expect((await reruns.waiting()).map((r) => r.id)).not.toContain(waiting.id);
        expect(await reruns.schedule({ ...rerun, dueAt: 1_700_000_009_000 })).not.toBeNull();
      });
    });

    describe('ShadowRepository', () => {
      const config = () =>
        ShadowCampaignInputSchema.parse({
          name: uid('shadow'),
          primary: { baseUrl: 'http://127.0.0.1:8001/v1' },
          secondary: { baseUrl: 'http://127.0.0.1:8002/v1' },
          candidate: { baseUrl: 'http://127.0.0.1:8003/v1' },
          model: 'm',
          source: { type: 'inline', requests: [{ body: { messages: [{ role: 'user', content: 'hi' }] } }] },
        });
      const observation = { ok: true, e2eMs: 120, ttftMs: 30, hallucinationRisk: 0.1 };
      const sample = (intent: string): ShadowSample => ({
        endpoint: '/v1/chat/completions',
        intent,
        primary: observation,
        secondary: { ...observation, e2eMs: 125 },
        candidate: { ...observation, ok: false, ttftMs: null, hallucinationRisk: null },
        similarityPrimarySecondary: 0.98,
        similarityPrimaryCandidate: null,
      });

      /** A lease no other test's claimant takes over (they ask for expired ones only). */
      const held = { owner: 'contract-suite', ttlMs: 600_000 };

      it('creates a running campaign with its config and returns null for an unknown id', async () => {
        const shadows = new ShadowRepository(db);
        const input = config();
        const created = await shadows.create(input, held);

        expect(created).toMatchObject({
          name: input.name,
          config: input,
          status: 'running',
          reason: null,
          report: null,
          endedAt: null,
        });
        expect(await shadows.get(created.id)).toEqual(created);
        expect(await shadows.get(uid('no-shadow'))).toBeNull();
      });

      it('returns the samples of a campaign in the order they were added', async () => {
        const shadows = new ShadowRepository(db);
        const campaign = await shadows.create(config(), held);
        const other = await shadows.create(config(), held);
        await shadows.addSample(
          campaign.id,
          { messages: [{ role: 'user', content: '[EMAIL]' }] },
          sample('a'),
        );
        await shadows.addSample(campaign.id, { n: 2 }, sample('b'));
        await shadows.addSample(other.id, { n: 3 }, sample('c'));

        const samples = await shadows.samples(campaign.id);

        expect(samples).toEqual([
          { request: { messages: [{ role: 'user', content: '[EMAIL]' }] }, sample: sample('a') },
          { request: { n: 2 }, sample: sample('b') },
        ]);
      });

      it('prunes a campaign to its newest samples and leaves the others alone', async () => {
        const shadows = new ShadowRepository(db);
        const campaign = await shadows.create(config(), held);
        const other = await shadows.create(config(), held);
        for (const intent of ['a', 'b', 'c', 'd', 'e'])
          await shadows.addSample(campaign.id, {}, sample(intent));
        await shadows.addSample(other.id, {}, sample('x'));

        expect(await shadows.pruneSamples(campaign.id, 2)).toBe(3);
        expect(await shadows.pruneSamples(campaign.id, 2)).toBe(0);

        expect((await shadows.samples(campaign.id)).map((s) => s.sample.intent)).toEqual(['d', 'e']);
        expect((await shadows.samples(other.id)).map((s) => s.sample.intent)).toEqual(['x']);
      });

      it('reads back the samples stored after a seq: the newest or a random few, and how many', async () => {
        const shadows = new ShadowRepository(db);
        const campaign = await shadows.create(config(), held);
        const other = await shadows.create(config(), held);
        const seqs: number[] = [];
        for (const intent of ['a', 'b', 'c', 'd', 'e'])
          seqs.push(await shadows.addSample(campaign.id, {}, sample(intent)));
        await shadows.addSample(other.id, {}, sample('x'));
        expect(seqs.every((seq, i) => i === 0 || seq > seqs[i - 1])).toBe(true);

        expect(await shadows.samplesAfter(campaign.id, seqs[1], 2, 'newest')).toEqual({
          total: 3,
          samples: [
            { seq: seqs[3], sample: sample('d') },
            { seq: seqs[4], sample: sample('e') },
          ],
        });
        const few = await shadows.samplesAfter(campaign.id, seqs[0], 3, 'random');
        expect(few.total).toBe(4);
        expect(few.samples).toHaveLength(3);
        expect(few.samples.map((s) => s.seq)).toEqual(
          [...new Set(few.samples.map((s) => s.seq))].sort((a, b) => a - b),
        );
        for (const { seq, sample: stored } of few.samples) {
          expect(seqs.slice(1)).toContain(seq);
          expect(stored).toEqual(sample('abcde'[seqs.indexOf(seq)]));
        }
        expect((await shadows.samplesAfter(campaign.id, 0, 10, 'random')).samples.map((s) => s.seq)).toEqual(
          seqs,
        );
        expect(await shadows.samplesAfter(campaign.id, seqs[4], 10, 'newest')).toEqual({
          total: 0,
          samples: [],
        });

        // What pruning deleted is not found.
        await shadows.pruneSamples(campaign.id, 1);
        expect(await shadows.samplesAfter(campaign.id, 0, 10, 'newest')).toEqual({
          total: 1,
          samples: [{ seq: seqs[4], sample: sample('e') }],
        });
      });

      it('refuses a sample of an unknown campaign', async () => {
        await expect(new ShadowRepository(db).addSample(uid('no-shadow'), {}, sample('a'))).rejects.toThrow();
      });

      it('finishes a campaign with its status, report, reason and end time', async () => {
        const shadows = new ShadowRepository(db);
        const done = await shadows.create(config(), held);
        const failed = await shadows.create(config(), held);
        const report = {
          samples: 1,
          similarity: 'compared' as const,
          groups: [
            { endpoint: '/v1/chat/completions', intent: 'a', samples: 1, metrics: [], differences: [] },
          ],
        };

        await shadows.finish(done.id, 'completed', report, null);
        await shadows.finish(failed.id, 'failed', null, 'primary unreachable');

        expect(await shadows.get(done.id)).toMatchObject({ status: 'completed', report, reason: null });
        expect((await shadows.get(done.id))!.endedAt).toEqual(expect.any(Number));
        expect(await shadows.get(failed.id)).toMatchObject({
          status: 'failed',
          report: null,
          reason: 'primary unreachable',
        });
      });
    });

    describe('ShadowRepository leases', () => {
      const config = (source: Record<string, unknown> = { type: 'live' }) =>
        ShadowCampaignInputSchema.parse({
          name: uid('shadow-lease'),
          primary: { baseUrl: 'http://127.0.0.1:8001/v1' },
          secondary: { baseUrl: 'http://127.0.0.1:8002/v1' },
          candidate: { baseUrl: 'http://127.0.0.1:8003/v1' },
          model: 'm',
          source,
        });
      const lease = (owner: string, ttlMs = 600_000) => ({ owner, ttlMs });
      const ids = (campaigns: Array<{ id: string }>) => campaigns.map((c) => c.id);

      it('takes over a running campaign only once its lease has expired', async () => {
        const shadows = new ShadowRepository(db);
        const held = await shadows.create(config(), lease(uid('a')));
        const expired = await shadows.create(config(), lease(uid('a'), 0));
        const ended = await shadows.create(config(), lease(uid('a'), 0));
        await shadows.finish(ended.id, 'completed', null, 'stopped');
        const b = uid('b');

        const taken = await shadows.takeOverExpired(lease(b));

        expect(ids(taken)).toContain(expired.id);
        expect(ids(taken)).not.toContain(held.id);
        expect(ids(taken)).not.toContain(ended.id);
        expect(taken.find((c) => c.id === expired.id)).toMatchObject({
          status: 'running',
          config: expired.config,
        });
        // Now held by b, for its lease: nobody else takes it.
        expect(ids(await shadows.takeOverExpired(lease(uid('c'))))).not.toContain(expired.id);
        expect(await shadows.renewLeases(lease(b))).toEqual([expired.id]);
      });

      it('renews what its owner holds, so it is not taken over, and nothing of others', async () => {
        const shadows = new ShadowRepository(db);
        const a = uid('a');
        const mine = await shadows.create(config(), lease(a, 0));
        const theirs = await shadows.create(config(), lease(uid('other'), 0));

        expect(await shadows.renewLeases(lease(a))).toEqual([mine.id]);

        const taken = ids(await shadows.takeOverExpired(lease(uid('b'))));
        expect(taken).not.toContain(mine.id);
        expect(taken).toContain(theirs.id);
      });

      it('gives a campaign whose lease expired to one of two claimants asking at once', async () => {
        const shadows = new ShadowRepository(db);
        const expired = await shadows.create(config(), lease(uid('dead'), 0));
        const [b, c] = [uid('b'), uid('c')];

        const [byB, byC] = await Promise.all([
          shadows.takeOverExpired(lease(b)),
          shadows.takeOverExpired(lease(c)),
        ]);

        expect([...ids(byB), ...ids(byC)].filter((id) => id === expired.id)).toHaveLength(1);
        const winner = ids(byB).includes(expired.id) ? b : c;
        const loser = winner === b ? c : b;
        expect(await shadows.renewLeases(lease(winner))).toContain(expired.id);
        expect(await shadows.renewLeases(lease(loser))).not.toContain(expired.id);
      });

      it('loses a campaign taken over: its renewal misses it and its report writes are ignored', async () => {
        const shadows = new ShadowRepository(db);
        const [a, b] = [uid('a'), uid('b')];
        const campaign = await shadows.create(config(), lease(a, 0));
        const report = (samples: number) => ({ samples, similarity: 'not configured' as const, groups: [] });
        await shadows.updateReport(campaign.id, report(1), a);
        expect((await shadows.get(campaign.id))?.report).toEqual(report(1));

        expect(ids(await shadows.takeOverExpired(lease(b)))).toContain(campaign.id);

        expect(await shadows.renewLeases(lease(a))).toEqual([]);
        await shadows.updateReport(campaign.id, report(2), a);
        expect((await shadows.get(campaign.id))?.report).toEqual(report(1));
        await shadows.updateReport(campaign.id, report(3), b);
        expect((await shadows.get(campaign.id))?.report).toEqual(report(3));
      });

      it('hands a released campaign over at once, and keeps an ended one out of renewals', async () => {
        const shadows = new ShadowRepository(db);
        const a = uid('a');
        const released = await shadows.create(config(), lease(a));
        const ended = await shadows.create(config(), lease(a));
        await shadows.finish(ended.id, 'failed', null, 'x');
        expect(await shadows.renewLeases(lease(a))).toEqual([released.id]);

        await shadows.releaseLeases(a);

        expect(ids(await shadows.takeOverExpired(lease(uid('b'))))).toContain(released.id);
      });

      it('releases one campaign of an owner, keeping the others', async () => {
        const shadows = new ShadowRepository(db);
        const a = uid('a');
        const [given, kept] = [
          await shadows.create(config(), lease(a)),
          await shadows.create(config(), lease(a)),
        ];

        await shadows.releaseLeases(a, given.id);
        // Given up, not renewed by its former owner's next pass.
        expect(await shadows.renewLeases(lease(a))).toEqual([kept.id]);

        const taken = ids(await shadows.takeOverExpired(lease(uid('b'))));
        expect(taken).toContain(given.id);
        expect(taken).not.toContain(kept.id);
      });

      it('lists the running live campaigns, whoever holds them', async () => {
        const shadows = new ShadowRepository(db);
        const live = await shadows.create(config(), lease(uid('a')));
        const inline = await shadows.create(
          config({ type: 'inline', requests: [{ body: { messages: [{ role: 'user', content: 'hi' }] } }] }),
          lease(uid('a')),
        );
        const stopped = await shadows.create(config(), lease(uid('a')));
        await shadows.finish(stopped.id, 'completed', null, 'stopped');

        const running = await shadows.runningLiveIds();

        expect(running).toContain(live.id);
        expect(running).not.toContain(inline.id);
        expect(running).not.toContain(stopped.id);
      });
    });

    describe('ShadowBreakerRepository', () => {
      const key = { target: 'http://127.0.0.1:8003/v1', layer: 'llm', node: '127.0.0.1:8003' };
      const open = (runId: string): StoredShadowBreaker => ({
        runId,
        key,
        state: 'open',
        since: 1_700_000_060_000,
        openedAt: 1_700_000_060_000,
        outcomes: [],
        probes: [],
        paths: [],
        judgedUntil: 1_700_000_060_000,
        lastSignalId: uid('signal'),
      });

      it('stores a breaker per run and key, and reads it back as stored', async () => {
        const breakers = new ShadowBreakerRepository(db);
        const runId = uid('shadow-run');
        expect(await breakers.get(runId, key)).toBeNull();
        const neverMoved: StoredShadowBreaker = {
          ...open(runId),
          state: 'closed',
          since: 0,
          openedAt: 0,
          outcomes: [{ at: 1_700_000_000_001, ok: true, slow: false }],
          paths: ['/v1/chat/completions'],
        };
        expect(await breakers.save(neverMoved)).toBe(true);
        expect(await breakers.get(runId, key)).toEqual(neverMoved);
        expect(await breakers.get(runId, { ...key, node: 'elsewhere:1' })).toBeNull();
        expect(await breakers.get(uid('shadow-run'), key)).toBeNull();
      });

      it('replaces a breaker with a later judgement, never with an earlier or the same one', async () => {
        const breakers = new ShadowBreakerRepository(db);
        const opened = open(uid('shadow-run'));
        await breakers.save(opened);
        const halfOpen: StoredShadowBreaker = {
          ...opened,
          state: 'half-open',
          since: 1_700_000_120_000,
          probes: [{ at: 1_700_000_120_000, ok: true, slow: false }],
          judgedUntil: 1_700_000_120_000,
          lastSignalId: uid('signal'),
        };
        expect(await breakers.save(halfOpen)).toBe(true);
        // A late writer (an analyzer that lost the partition) judged an earlier window.
        expect(await breakers.save({ ...opened, lastSignalId: uid('signal') })).toBe(false);
        expect(await breakers.save({ ...halfOpen, state: 'closed' })).toBe(false);
        expect(await breakers.get(opened.runId, key)).toEqual(halfOpen);
      });

      it("deletes a shadow campaign's breakers when it ends, and stores none for it afterwards", async () => {
        const shadows = new ShadowRepository(db);
        const breakers = new ShadowBreakerRepository(db);
        const input = ShadowCampaignInputSchema.parse({
          name: uid('shadow'),
          primary: { baseUrl: 'http://127.0.0.1:8001/v1' },
          secondary: { baseUrl: 'http://127.0.0.1:8002/v1' },
          candidate: { baseUrl: 'http://127.0.0.1:8003/v1' },
          model: 'm',
          source: { type: 'live' },
        });
        const lease = { owner: uid('orchestrator'), ttlMs: 600_000 };
        const [ending, other] = [await shadows.create(input, lease), await shadows.create(input, lease)];
        const [endingBreaker, otherBreaker] = [open(shadowRunId(ending.id)), open(shadowRunId(other.id))];
        expect(await breakers.save(endingBreaker)).toBe(true);
        expect(await breakers.save({ ...endingBreaker, key: { ...key, node: 'n2:1' } })).toBe(true);
        expect(await breakers.save(otherBreaker)).toBe(true);

        await shadows.finish(ending.id, 'completed', null, 'stopped');

        expect(await breakers.get(shadowRunId(ending.id), key)).toBeNull();
        expect(await breakers.get(shadowRunId(ending.id), { ...key, node: 'n2:1' })).toBeNull();
        expect(await breakers.get(shadowRunId(other.id), key)).toEqual(otherBreaker);
        // The last window's signal, judged after the stop, brings no row back.
        expect(await breakers.save({ ...endingBreaker, judgedUntil: 1_700_000_999_000 })).toBe(false);
        expect(await breakers.get(shadowRunId(ending.id), key)).toBeNull();
      });

      it('refuses a state that is not a breaker state', async () => {
        await expect(
          new ShadowBreakerRepository(db).save({ ...open(uid('shadow-run')), state: 'ajar' as never }),
        ).rejects.toThrow();
      });
    });
  });
}

/** A valid campaign spec (defaults filled, as the contract outputs it). */
export function campaignSpec(overrides: Partial<CampaignSpec> = {}): CampaignSpec {
  return CampaignSpecSchema.parse({
    name: 'storage.contract-suite',
    target: { baseUrl: 'http://127.0.0.1:8000/v1' },
    scenario: { type: 'chat', prompts: ['Say hello.'] },
    load: { concurrency: 4, durationMs: 10_000 },
    slo: { p99Ms: 800 },
    ...overrides,
  });
}

export function runSummary(): RunSummary {
  const quantiles = { count: 120, mean: 210.5, p50: 190, p95: 400, p99: 610.25, max: 700 };
  return {
    status: 'completed',
    reason: null,
    startedAt: 1_700_000_000_000,
    endedAt: 1_700_000_010_000,
    requests: 120,
    errors: 2,
    errorRate: 2 / 120,
    errorClasses: { timeout: 2 },
    dropped: 0,
    latencyMs: { e2e: quantiles, correctedE2e: quantiles, ttft: { ...quantiles, p99: 90 }, itl: quantiles },
    throughput: { requestsPerSec: 12, outputTokensPerSec: 768 },
    tokens: { input: 2400, output: 7680 },
    semantic: {
      responses: 118,
      outputTokens: 7680,
      gapMeanMs: 14.2,
      tokenCountMismatches: 0,
      detectorSignals: 1,
    },
    gpu: { scrapes: 10, gaps: 0, last: { 'gpu.utilization': 0.82 } },
    tier: 'SLO-0',
    tierChanges: [{ at: 1_700_000_005_000, from: null, to: 'SLO-0', reason: 'first window' }],
    slo: { passed: true, failures: [] },
  };
}
