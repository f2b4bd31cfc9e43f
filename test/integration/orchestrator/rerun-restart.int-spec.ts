import { randomUUID } from 'node:crypto';
import { createBus, type Bus } from '@fathom/bus';
import {
  CampaignRepository,
  RunRepository,
  openDatabase,
  type Database,
  type StoredRun,
} from '@fathom/storage';
import {
  CampaignSpecSchema,
  Topics,
  envelope,
  type CampaignSpecInput,
  type RunSummary,
} from '@fathom/contracts';
import { dropTestSchemas, saveEnv, TEST_DATABASE_URL, waitFor } from '@fathom/testing';
import { createFathomApp, type FathomApp } from '@fathom/runtime';

/** The real server the integration tests run against (trust auth). */
const ENV_KEYS = ['FATHOM_RERUN_BACKOFF_MS', 'FATHOM_RECONCILE_INTERVAL_MS'] as const;

/**
 * Rerun decisions outlive the orchestrator that made them: a rerun waiting for its cool-down when
 * the orchestrator stops starts after the restart, exactly once even when two orchestrators come
 * back at the same time on the same PostgreSQL database; a rerun asked for while the run was still
 * going is honoured by the orchestrator that receives the run's report after a restart.
 * Orchestrators only (no load-generator): a rerun's run is created and its plan published.
 */
describe('reruns across orchestrator restarts', () => {
  jest.setTimeout(60_000);
  const schema = `fathom_reruns_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const restoreEnv = saveEnv(ENV_KEYS);
  const databases: Database[] = [];
  const apps: FathomApp[] = [];
  let bus: Bus;
  let db: Database;
  let runs: RunRepository;
  let campaigns: CampaignRepository;

  const openDb = async () => {
    const opened = await openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL, schema });
    databases.push(opened);
    return opened;
  };
  const orchestrator = async (database: Database) => {
    const app = await createFathomApp({ services: ['orchestrator'], bus, database, logLevels: false });
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    Object.assign(process.env, { FATHOM_RERUN_BACKOFF_MS: '0', FATHOM_RECONCILE_INTERVAL_MS: '300' });
    bus = createBus({ kind: 'memory' });
    db = await openDb();
    runs = new RunRepository(db);
    campaigns = new CampaignRepository(db);
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
    await bus?.close();
    for (const database of databases) await database.close();
    await dropTestSchemas(schema);
    restoreEnv();
  });

  const newCampaign = (cooldownMs: number) => {
    const input: CampaignSpecInput = {
      name: 'rerun restart',
      target: { baseUrl: 'http://127.0.0.1:9/v1' },
      scenario: { type: 'chat', prompts: ['hello'] },
      load: { concurrency: 1, durationMs: 60_000 },
      reruns: { maxReruns: 3, cooldownMs },
    };
    return campaigns.create({ spec: CampaignSpecSchema.parse(input) });
  };
  const rerunsOf = async (campaignId: string): Promise<StoredRun[]> =>
    (await runs.list({ campaignId })).filter((r) => r.trigger === 'rerun');
  const tierChange = (campaignId: string, runId: string) =>
    bus.publish(Topics.sloTier, {
      ...envelope(campaignId, runId),
      from: 'SLO-0',
      to: 'SLO-1',
      reason: 'P99 950 ms > 800 ms',
      figures: { value: 950, threshold: 800 },
    });

  it('starts a rerun decided before the orchestrator stopped once, after two orchestrators restart', async () => {
    const first = await orchestrator(db);
    // 5 s cool-down: the decision is made now and the first orchestrator is gone long before.
    const campaign = await newCampaign(5_000);
    const parent = await runs.create({ campaignId: campaign.id, trigger: 'api' });
    await runs.transition(parent.id, 'running');
    await runs.transition(parent.id, 'completed');

    await tierChange(campaign.id, parent.id);
    const decided = await waitFor(
      async () =>
        (
          await db.query<{ due_at: Date }>(`SELECT due_at FROM scheduled_reruns WHERE campaign_id = $1`, [
            campaign.id,
          ])
        )[0],
      { timeoutMs: 10_000, description: 'the rerun decision stored' },
    );
    await first.close();
    // Stopped before the rerun was due: without a stored decision nothing would start it now.
    expect(Date.now()).toBeLessThan(new Date(decided.due_at).getTime());
    expect(await rerunsOf(campaign.id)).toEqual([]);

    // Two orchestrators, each with its own connection pool, resume the same decision at once.
    await Promise.all([orchestrator(await openDb()), orchestrator(await openDb())]);
    await waitFor(async () => (await rerunsOf(campaign.id)).length > 0, {
      timeoutMs: 15_000,
      intervalMs: 100,
      description: 'the rerun started after the restart',
    });
    // Both armed a timer and both re-read the waiting reruns every 300 ms: room for a second start.
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    const started = await rerunsOf(campaign.id);
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      parentRunId: parent.id,
      reason: 'tier SLO-0 -> SLO-1: P99 950 ms > 800 ms',
    });
    expect(started[0].createdAt).toBeGreaterThanOrEqual(new Date(decided.due_at).getTime() - 50);
    const [row] = await db.query<{ status: string; run_id: string }>(
      `SELECT status, run_id FROM scheduled_reruns WHERE campaign_id = $1`,
      [campaign.id],
    );
    expect(row).toEqual({ status: 'started', run_id: started[0].id });
  });

  it('holds a due rerun while another run of its campaign is open and starts it once that run ends', async () => {
    await orchestrator(db);
    const campaign = await newCampaign(1_500);
    const parent = await runs.create({ campaignId: campaign.id, trigger: 'api' });
    await runs.transition(parent.id, 'running');
    await runs.transition(parent.id, 'completed');
    await tierChange(campaign.id, parent.id);
    await waitFor(
      async () =>
        (await db.query(`SELECT 1 FROM scheduled_reruns WHERE campaign_id = $1`, [campaign.id])).length > 0,
      { timeoutMs: 10_000, description: 'the rerun decision stored' },
    );
    // During the cool-down another run of the campaign (a schedule's, say) starts.
    const other = await runs.create({ campaignId: campaign.id, trigger: 'schedule' });
    await runs.transition(other.id, 'running');

    // Well past the cool-down: the rerun must still wait, unclaimed.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await rerunsOf(campaign.id)).toEqual([]);
    const [waiting] = await db.query<{ status: string }>(
      `SELECT status FROM scheduled_reruns WHERE campaign_id = $1`,
      [campaign.id],
    );
    expect(waiting.status).toBe('scheduled');

    await runs.transition(other.id, 'completed');
    const [rerun] = await waitFor(
      async () => {
        const started = await rerunsOf(campaign.id);
        return started.length > 0 ? started : null;
      },
      { timeoutMs: 10_000, intervalMs: 100, description: 'the rerun started after the other run ended' },
    );
    expect(rerun.parentRunId).toBe(parent.id);
    const ended = (await runs.get(other.id))?.endedAt;
    expect(rerun.createdAt).toBeGreaterThanOrEqual(ended as number);
  });

  it('honours a rerun asked for while the run was going when its report reaches a restarted orchestrator', async () => {
    // Orchestrators from the test above may still be up: stop them so only the next one consumes.
    for (const app of apps.splice(0)) await app.close();
    const before = await orchestrator(db);
    const campaign = await newCampaign(0);
    const parent = await runs.create({ campaignId: campaign.id, trigger: 'api' });
    await runs.transition(parent.id, 'running');

    await tierChange(campaign.id, parent.id);
    await waitFor(
      async () =>
        (await db.query(`SELECT 1 FROM rerun_requests WHERE parent_run_id = $1`, [parent.id])).length > 0,
      { timeoutMs: 10_000, description: 'the rerun request stored' },
    );
    await before.close();

    await orchestrator(db);
    await bus.publish(Topics.runReport, {
      ...envelope(campaign.id, parent.id),
      summary: completedSummary(),
      validity: { valid: true, reasons: [] },
    });

    const [rerun] = await waitFor(
      async () => {
        const found = await rerunsOf(campaign.id);
        return found.length ? found : null;
      },
      { timeoutMs: 15_000, intervalMs: 100, description: 'the rerun after the report' },
    );
    expect(rerun).toMatchObject({
      parentRunId: parent.id,
      reason: 'tier SLO-0 -> SLO-1: P99 950 ms > 800 ms',
    });
    expect((await runs.get(parent.id))?.status).toBe('completed');
  });

  it('folds a change reported for an ended run into the open run of its campaign, not dropping it', async () => {
    for (const app of apps.splice(0)) await app.close();
    await orchestrator(db);
    const campaign = await newCampaign(0);
    const ended = await runs.create({ campaignId: campaign.id, trigger: 'api' });
    await runs.transition(ended.id, 'running');
    await runs.transition(ended.id, 'completed');
    const open = await runs.create({ campaignId: campaign.id, trigger: 'schedule' });
    await runs.transition(open.id, 'running');

    // The analyzer's late verdict on the ended run arrives while the schedule's run is going.
    await tierChange(campaign.id, ended.id);
    await waitFor(
      async () =>
        (await db.query(`SELECT 1 FROM rerun_requests WHERE parent_run_id = $1`, [open.id])).length > 0,
      { timeoutMs: 10_000, description: 'the request folded into the open run' },
    );
    expect(await rerunsOf(campaign.id)).toEqual([]);

    await runs.transition(open.id, 'completed');
    await bus.publish(Topics.runReport, {
      ...envelope(campaign.id, open.id),
      summary: completedSummary(),
      validity: { valid: true, reasons: [] },
    });
    const [rerun] = await waitFor(
      async () => {
        const found = await rerunsOf(campaign.id);
        return found.length ? found : null;
      },
      { timeoutMs: 15_000, intervalMs: 100, description: 'the rerun after the open run ended' },
    );
    expect(rerun.reason).toBe('tier SLO-0 -> SLO-1: P99 950 ms > 800 ms');
  });
});

function completedSummary(): RunSummary {
  const quantiles = { count: 10, mean: 200, p50: 190, p95: 400, p99: 950, max: 990 };
  return {
    status: 'completed',
    reason: null,
    startedAt: Date.now() - 10_000,
    endedAt: Date.now(),
    requests: 10,
    errors: 0,
    errorRate: 0,
    errorClasses: {},
    dropped: 0,
    latencyMs: { e2e: quantiles, correctedE2e: quantiles, ttft: quantiles, itl: quantiles },
    throughput: { requestsPerSec: 1, outputTokensPerSec: 64 },
    tokens: { input: 200, output: 640 },
    semantic: {
      responses: 10,
      outputTokens: 640,
      gapMeanMs: 14,
      tokenCountMismatches: 0,
      detectorSignals: 0,
    },
    gpu: { scrapes: 0, gaps: 0, last: {} },
    tier: 'SLO-1',
    tierChanges: [],
    slo: { passed: false, failures: [] },
  };
}
