import { randomUUID } from 'node:crypto';
import { CampaignSpecSchema, type CampaignSpec, type RunStatus, type RunSummary } from '@fathom/contracts';
import type { Database } from './database/database';
import { migrate } from './migrations/migrator';
import { MIGRATIONS } from './migrations/migrations';
import { createRepositories, type StorageRepositories } from './repositories/repositories';
import { RunNotFoundError } from './repositories/run.repository';
import { RUN_EVENT_ROWS_PER_STATEMENT, type RunEventRecord } from './repositories/run-event.repository';

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
        'running->failed',
        'running->aborted',
      ]);
      const statuses: RunStatus[] = ['pending', 'running', 'completed', 'failed', 'aborted'];
      const pathTo: Record<RunStatus, RunStatus[]> = {
        pending: [],
        running: ['running'],
        completed: ['running', 'completed'],
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
