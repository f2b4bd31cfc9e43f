import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBus, InMemoryBus, type Bus } from '@fathom/bus';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { CampaignRepository, RunRepository, openDatabase, type Database } from '@fathom/storage';
import { CampaignSpecSchema, Topics, type CampaignSpecInput, type RunShardCommand } from '@fathom/contracts';
import { dropTestSchemas, saveEnv, TEST_DATABASE_URL, waitFor } from '@fathom/testing';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { createFathomApp, type FathomApp } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

/** The real server the integration tests run against (trust auth). */
const ENV_KEYS = [
  'FATHOM_ANALYZER_SETTLE_MS',
  'FATHOM_RECONCILE_INTERVAL_MS',
  'FATHOM_SCHEDULER_TICK_MS',
  'FATHOM_RUN_GRACE_MS',
] as const;

type PublishMany = Bus['publishMany'];

/** Start-shard commands a `publishMany` call resolved for, by run id: the plans that went out. */
class PlanLedger {
  readonly published = new Map<string, RunShardCommand[]>();
  /** runShard publishes the bus refused. */
  refused = 0;

  count(runId: string): number {
    return this.published.get(runId)?.length ?? 0;
  }

  record(events: readonly unknown[]): void {
    for (const command of events as RunShardCommand[]) {
      this.published.set(command.runId, [...(this.published.get(command.runId) ?? []), command]);
    }
  }
}

/**
 * Wraps `publishMany` of `target` (a bus, or the in-memory bus's prototype for buses created
 * later): runShard publishes are refused while `down()` says so, take `slowMs` first (a broker
 * slow to acknowledge), and are counted when they succeed.
 */
function watchPlans(
  target: { publishMany: PublishMany },
  { down = () => false, slowMs = 0 }: { down?: () => boolean; slowMs?: number } = {},
): PlanLedger {
  const ledger = new PlanLedger();
  const original = target.publishMany;
  jest.spyOn(target, 'publishMany').mockImplementation(async function (this: Bus, topic, events) {
    const isPlan = topic.name === Topics.runShard.name;
    if (isPlan && down()) {
      ledger.refused++;
      throw new Error('broker unreachable');
    }
    if (isPlan && slowMs > 0) await new Promise((resolve) => setTimeout(resolve, slowMs));
    await original.call(this, topic, events);
    if (isPlan) ledger.record(events);
  } as PublishMany);
  return ledger;
}

async function post(base: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status >= 300) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

/**
 * A run's plan (its start-shard commands) is owed until the bus took it: an orchestrator that
 * stopped after creating the run and before publishing, or a bus that refused the publish,
 * leaves the run pending with its plan owed, and the next orchestrator pass publishes it, once.
 */
describe('run plans owed to the load-generators', () => {
  jest.setTimeout(60_000);
  const restoreEnv = saveEnv(ENV_KEYS);
  let sim: SimTarget;

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } });
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  afterAll(async () => {
    await sim?.close();
    restoreEnv();
  });

  const campaignInput = (name: string, durationMs: number, shards = 1): CampaignSpecInput => ({
    name,
    target: { baseUrl: `${sim.url}/v1` },
    scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['hello'], maxTokens: 8 },
    load: { concurrency: 2, durationMs, shards },
  });

  describe('embedded (PGlite), restarted on the same data dir', () => {
    let dataDir: string;
    let stack: EmbeddedFathom | null = null;

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'fathom-plan-outbox-'));
    });

    afterAll(async () => {
      await stack?.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('starts the runs whose plans never reached the bus before the orchestrator stopped, once each', async () => {
      // First life: no periodic pass, so only the restart can hand the plans out.
      Object.assign(process.env, {
        FATHOM_ANALYZER_SETTLE_MS: '1000',
        FATHOM_RECONCILE_INTERVAL_MS: '600000',
        FATHOM_SCHEDULER_TICK_MS: '600000',
        FATHOM_RUN_GRACE_MS: '120000',
      });
      stack = await startEmbedded({ dataDir, logLevels: false });
      const first = stack;

      // The bus refuses the plan when the run is created: the run is accepted and stays pending.
      const firstLedger = watchPlans(first.bus, { down: () => true });
      const refused = await post(first.url, '/v1/campaigns', campaignInput('bus down', 400));
      const refusedId = String(refused.runId);
      expect(firstLedger.refused).toBe(1);
      expect(await first.runs.get(refusedId)).toMatchObject({ status: 'pending', planPublishedAt: null });

      // The crash: the run row committed, then the process died before the publish. The row it
      // leaves behind is what `RunRepository.create` stores.
      const campaign = await first.fathom.app
        .get(CampaignRepository)
        .create({ spec: CampaignSpecSchema.parse(campaignInput('crashed', 400)) });
      const crashed = await first.runs.create({ campaignId: campaign.id, trigger: 'api' });
      await first.close();
      stack = null;
      expect(firstLedger.published.size).toBe(0);

      // Second life on the same files, its bus up.
      Object.assign(process.env, { FATHOM_RECONCILE_INTERVAL_MS: '1000' });
      const ledger = watchPlans(InMemoryBus.prototype);
      stack = await startEmbedded({ dataDir, logLevels: false });
      const second = stack;

      for (const runId of [refusedId, crashed.id]) {
        const ended = await waitForRun(second.runs, runId, { timeoutMs: 30_000 });
        expect(ended.status).toBe('completed');
        expect(ended.summary?.requests).toBeGreaterThan(0);
        expect(ended.planPublishedAt).not.toBeNull();
      }
      // Two more reconcile passes: a plan already handed out is not owed any more.
      await new Promise((resolve) => setTimeout(resolve, 2_200));
      expect(ledger.count(refusedId)).toBe(1);
      expect(ledger.count(crashed.id)).toBe(1);
    }, 80_000);
  });

  it('retries a plan the bus refused on the next pass and publishes it once the bus is back', async () => {
    Object.assign(process.env, {
      FATHOM_ANALYZER_SETTLE_MS: '1000',
      FATHOM_RECONCILE_INTERVAL_MS: '300',
      FATHOM_SCHEDULER_TICK_MS: '600000',
      FATHOM_RUN_GRACE_MS: '120000',
    });
    let busDown = true;
    const ledger = watchPlans(InMemoryBus.prototype, { down: () => busDown });
    const stack = await startEmbedded({ dataDir: null, logLevels: false });
    try {
      const started = await post(stack.url, '/v1/campaigns', campaignInput('bus flaps', 400));
      const runId = String(started.runId);
      // The passes every 300 ms try again and are refused; the run waits, neither failed nor lost.
      await waitFor(() => ledger.refused >= 3, { timeoutMs: 10_000, description: 'three refused publishes' });
      expect(await stack.runs.get(runId)).toMatchObject({ status: 'pending', planPublishedAt: null });

      busDown = false;
      const ended = await waitForRun(stack.runs, runId, { timeoutMs: 30_000 });
      expect(ended.status).toBe('completed');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(ledger.count(runId)).toBe(1);
    } finally {
      await stack.close();
    }
  });

  describe('two orchestrators on one PostgreSQL database', () => {
    const schema = `fathom_plans_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const databases: Database[] = [];
    const apps: FathomApp[] = [];
    let bus: Bus;

    const openDb = async () => {
      const opened = await openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL, schema });
      databases.push(opened);
      return opened;
    };

    beforeAll(() => {
      bus = createBus({ kind: 'memory' });
    });

    afterAll(async () => {
      for (const app of apps) await app.close();
      await bus?.close();
      for (const database of databases) await database.close();
      await dropTestSchemas(schema);
    });

    it('publish a plan owed from before their start once between them', async () => {
      Object.assign(process.env, { FATHOM_RECONCILE_INTERVAL_MS: '200' });
      const db = await openDb();
      const runs = new RunRepository(db);
      const campaign = await new CampaignRepository(db).create({
        spec: CampaignSpecSchema.parse(campaignInput('crashed on pg', 60_000, 3)),
      });
      // What the crash left: the run created, its plan never published, no orchestrator up.
      const crashed = await runs.create({ campaignId: campaign.id, trigger: 'api' });

      // A load-generator's group: every start-shard command reaches it once.
      const commands: RunShardCommand[] = [];
      await bus.subscribe(Topics.runShard, { group: 'plan-outbox-test', fromBeginning: true }, (command) => {
        if (command.runId === crashed.id) commands.push(command);
      });
      // The broker takes 600 ms to acknowledge: each orchestrator's passes (every 200 ms) meet
      // the other's publish in flight, the window where a plan read as owed could go out twice.
      const ledger = watchPlans(bus, { slowMs: 600 });
      // Two orchestrators, each with its own pool, come back at once.
      const [a, b] = await Promise.all([
        createFathomApp({ services: ['orchestrator'], bus, database: await openDb(), logLevels: false }),
        createFathomApp({ services: ['orchestrator'], bus, database: await openDb(), logLevels: false }),
      ]);
      apps.push(a, b);

      await waitFor(() => commands.length >= 3, {
        timeoutMs: 10_000,
        description: "the crashed run's three shards published",
      });
      // Ten more passes each: room for a second publish.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(commands.map((c) => c.shard.index).sort()).toEqual([0, 1, 2]);
      expect(ledger.count(crashed.id)).toBe(3);
      const stored = await runs.get(crashed.id);
      expect(stored).toMatchObject({ status: 'pending' });
      expect(stored?.planPublishedAt).not.toBeNull();
      expect(await runs.listOwedPlans()).toEqual([]);
    });
  });
});
