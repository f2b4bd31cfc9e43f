import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createBus, type Bus } from '@fathom/bus';
import { CampaignRepository, openDatabase, type Database } from '@fathom/storage';
import { CampaignSpecSchema } from '@fathom/contracts';
import { dropTestSchemas, saveEnv, TEST_DATABASE_URL, waitFor } from '@fathom/testing';
import { createFathomApp, type FathomApp } from '@fathom/runtime';
import { AlertRepository } from '@fathom/storage';

/** The real server the integration tests run against (trust auth). */
const SECRET = 'alert-coalesce-race-secret';
const ENV_KEYS = [
  'FATHOM_ALERT_WEBHOOK_SECRET',
  'FATHOM_RECONCILE_INTERVAL_MS',
  'FATHOM_SCHEDULER_TICK_MS',
] as const;
const STARTS_AT = '2026-05-04T12:00:00.000Z';

type Outcome = {
  started: Array<{ runId: string }>;
  coalesced: Array<{ runId: string }>;
  aborted: string[];
};

/** A promise the test resolves by hand: where a hooked call waits for the other path to run. */
function gate(): { reached: boolean; open: () => void; wait: () => Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const state = {
    reached: false,
    open,
    wait: () => {
      state.reached = true;
      return opened;
    },
  };
  return state;
}

/**
 * One open run per campaign, between two orchestrators on one PostgreSQL database: alert A
 * started run R; alert B fires while A resolves. Whichever gets there first, B must end up
 * holding an open run (R when B joined it first, a new run when R was aborted first), never a
 * run that ended. Each test holds one path at its critical step (a hook on AlertRepository)
 * until the other has either finished or is waiting on the campaign's run lock, so both
 * interleavings are forced, not hoped for.
 */
describe('alert coalescing against a concurrent resolution, two orchestrators on PostgreSQL', () => {
  jest.setTimeout(60_000);
  const schema = `fathom_coalesce_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const restoreEnv = saveEnv(ENV_KEYS);
  const databases: Database[] = [];
  let bus: Bus;
  let first: FathomApp;
  let second: FathomApp;
  let db: Database;

  beforeAll(async () => {
    Object.assign(process.env, {
      FATHOM_ALERT_WEBHOOK_SECRET: SECRET,
      FATHOM_RECONCILE_INTERVAL_MS: '600000',
      FATHOM_SCHEDULER_TICK_MS: '600000',
    });
    bus = createBus({ kind: 'memory' });
    const open = async () => {
      const opened = await openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL, schema });
      databases.push(opened);
      return opened;
    };
    db = await open();
    // Orchestrators only: no load-generator, so the runs they start stay pending (open).
    first = await createFathomApp({
      services: ['orchestrator'],
      bus,
      database: await open(),
      logLevels: false,
    });
    second = await createFathomApp({
      services: ['orchestrator'],
      bus,
      database: await open(),
      logLevels: false,
    });
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  afterAll(async () => {
    await first?.close();
    await second?.close();
    await bus?.close();
    for (const database of databases) await database.close();
    await dropTestSchemas(schema);
    restoreEnv();
  });

  /** A stored campaign (no run yet) and a rule mapping alerts named `alertname` to it. */
  const campaignFor = async (alertname: string): Promise<string> => {
    const campaign = await new CampaignRepository(db).create({
      spec: CampaignSpecSchema.parse({
        name: `race ${alertname}`,
        target: { baseUrl: 'http://127.0.0.1:9/v1' },
        scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['hello'], maxTokens: 8 },
        load: { concurrency: 1, durationMs: 600_000 },
      }),
    });
    await new AlertRepository(db).createRule({
      name: `rule ${alertname}`,
      matchLabels: { alertname },
      campaignId: campaign.id,
    });
    return campaign.id;
  };

  /** Posts one alert (firing or resolved) to `app`'s webhook; the promise settles with the answer. */
  const alert = async (
    app: FathomApp,
    alertname: string,
    fingerprint: string,
    status: 'firing' | 'resolved',
  ): Promise<Outcome> => {
    const fixture = JSON.parse(
      readFileSync(join(__dirname, '__fixtures__', 'alertmanager', `${status}.v4.json`), 'utf8'),
    ) as { groupKey: string; alerts: Array<Record<string, unknown>> };
    fixture.groupKey = `{}:{alertname="${alertname}"}`;
    fixture.alerts[0] = { ...fixture.alerts[0], labels: { alertname }, fingerprint, startsAt: STARTS_AT };
    const response = await fetch(`${app.url}/v1/hooks/alertmanager`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` },
      body: JSON.stringify(fixture),
    });
    if (response.status !== 200) throw new Error(`webhook: ${response.status} ${await response.text()}`);
    return (await response.json()) as Outcome;
  };

  /** Settles when `request` settled or some session waits for campaign `campaignId`'s run lock. */
  const finishedOrWaitingForLock = async (request: Promise<unknown>, campaignId: string) => {
    let settled = false;
    void request.then(
      () => (settled = true),
      () => (settled = true),
    );
    await waitFor(
      async () => {
        if (settled) return true;
        // RunRepository.lockCampaign's key: one bigint, so objid holds its low 32 bits.
        const [row] = await db.query<{ waiting: number }>(
          `SELECT count(*)::integer AS waiting FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
              AND objid::bigint = (hashtext('fathom.campaign-runs:' || $1)::bigint & 4294967295)`,
          [campaignId],
        );
        return row.waiting > 0;
      },
      { timeoutMs: 10_000, description: 'the other path to finish or wait for the campaign lock' },
    );
  };

  /** Where alert `fingerprint`'s trigger points, and that run's status. */
  const holding = async (fingerprint: string) => {
    const [row] = await db.query<{ run_id: string | null; status: string | null; coalesced: boolean }>(
      `SELECT t.run_id, r.status, t.coalesced FROM alert_triggers t LEFT JOIN runs r ON r.id = t.run_id
        WHERE t.fingerprint = $1`,
      [fingerprint],
    );
    return row;
  };

  const openRuns = (campaignId: string) =>
    db.query<{ id: string }>(
      `SELECT id FROM runs WHERE campaign_id = $1 AND status IN ('pending', 'running') ORDER BY created_at`,
      [campaignId],
    );

  it("keeps B's run open when A's resolution lands between B's open-run check and B's link", async () => {
    const name = 'RaceLinkOvertaken';
    const campaignId = await campaignFor(name);
    const [a, b] = ['a0000000000000a1', 'b0000000000000b1'];
    const fired = await alert(first, name, a, 'firing');
    expect(fired.started).toHaveLength(1);
    const runR = fired.started[0].runId;

    // B found R open and is about to be linked to it as coalesced: hold it there.
    const held = gate();
    const linkRun = AlertRepository.prototype.linkRun;
    jest.spyOn(AlertRepository.prototype, 'linkRun').mockImplementation(async function (
      this: AlertRepository,
      ...args: Parameters<AlertRepository['linkRun']>
    ) {
      if (args[0].fingerprint === b && args[2]?.coalesced) await held.wait();
      return linkRun.apply(this, args);
    });
    const bFiring = alert(first, name, b, 'firing');
    await waitFor(() => held.reached, { description: "B's coalesce link reached" });

    // A resolves on the other orchestrator meanwhile.
    const aResolved = alert(second, name, a, 'resolved');
    await finishedOrWaitingForLock(aResolved, campaignId);
    held.open();
    const [bOutcome, aOutcome] = await Promise.all([bFiring, aResolved]);

    const bHolds = await holding(b);
    expect(bHolds.status).toMatch(/^(pending|running)$/);
    expect((await openRuns(campaignId)).map((r) => r.id)).toEqual([bHolds.run_id]);
    // B joined R before A's release counted R's holders: R stays, held by B.
    expect(bOutcome.coalesced.map((c) => c.runId)).toEqual([runR]);
    expect(aOutcome.aborted).toEqual([]);
  });

  it("starts a new run for B when A's release counted no holder before B joined", async () => {
    const name = 'RaceAbortLate';
    const campaignId = await campaignFor(name);
    const [a, b] = ['a0000000000000a2', 'b0000000000000b2'];
    const fired = await alert(first, name, a, 'firing');
    expect(fired.started).toHaveLength(1);
    const runR = fired.started[0].runId;

    // A's release has counted R's firing holders (none): hold it before it aborts R.
    const held = gate();
    const firingHolders = AlertRepository.prototype.firingHolders;
    jest.spyOn(AlertRepository.prototype, 'firingHolders').mockImplementation(async function (
      this: AlertRepository,
      runId: string,
    ) {
      const count = await firingHolders.call(this, runId);
      if (runId === runR && !held.reached) await held.wait();
      return count;
    });
    const aResolved = alert(second, name, a, 'resolved');
    await waitFor(() => held.reached, { description: "A's release counted R's holders" });

    // B fires on the other orchestrator meanwhile.
    const bFiring = alert(first, name, b, 'firing');
    await finishedOrWaitingForLock(bFiring, campaignId);
    held.open();
    const [aOutcome, bOutcome] = await Promise.all([aResolved, bFiring]);

    const bHolds = await holding(b);
    expect(bHolds.status).toMatch(/^(pending|running)$/);
    expect((await openRuns(campaignId)).map((r) => r.id)).toEqual([bHolds.run_id]);
    // R ended for A; B did not join it but started its own run.
    expect(aOutcome.aborted).toEqual([runR]);
    expect(bOutcome.coalesced).toEqual([]);
    expect(bOutcome.started.map((s) => s.runId)).toEqual([bHolds.run_id]);
    expect(bHolds.coalesced).toBe(false);
  });
});
