import { randomUUID } from 'node:crypto';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { createBus, type Bus } from '@fathom/bus';
import {
  ShadowBreakerRepository,
  openDatabase,
  type Database,
  type StoredShadowCampaign,
} from '@fathom/storage';
import { Topics, shadowRunId, type BreakerChange, type ShadowLiveStatus } from '@fathom/contracts';
import { createFathomApp, type FathomApp } from '@fathom/runtime';

// Model ms -> wall ms: a 32-token answer in about 50 ms wall.
const TIME_SCALE = 0.1;
const WINDOW_MS = 2000;
const CONCURRENCY = 8;

/**
 * The analyzer's breaker on a live shadow candidate survives an analyzer restart: the
 * orchestrator and the analyzer run as two apps on one bus and one store (PGlite); a candidate
 * that hallucinates on every answer opens the breaker, the analyzer is replaced by a new
 * instance, and the candidate, still regressed, stays shed to the probe trickle with no change
 * announced (no second `closed -> open`); once it recovers, the new analyzer half-opens the
 * breaker the old one opened, a third one (replaced mid-probe) closes it, and the campaign's
 * report tells one story: open, half-open, closed.
 */
describe('shadow breaker across an analyzer restart', () => {
  let primary: SimTarget;
  let secondary: SimTarget;
  let candidate: SimTarget;
  let bus: Bus;
  let db: Database;
  let orchestrator: FathomApp;
  let analyzer: FathomApp | null = null;
  const announced: BreakerChange[] = [];

  const startAnalyzer = async () => {
    analyzer = await createFathomApp({ services: ['analyzer'], bus, database: db, logLevels: false });
  };
  const restartAnalyzer = async () => {
    await analyzer?.close();
    await startAnalyzer();
  };

  beforeAll(async () => {
    const sim = (faults: unknown[] = []) =>
      startSimTarget({ port: 0, config: { timeScale: TIME_SCALE, faults } as never });
    // Every candidate answer carries a planted hallucinated span (the others: one in five).
    [primary, secondary, candidate] = await Promise.all([
      sim(),
      sim(),
      sim([{ kind: 'hallucination_rate', rate: 1 }]),
    ]);
    bus = createBus({ kind: 'memory' });
    db = await openDatabase({ kind: 'pglite', dataDir: null });
    await bus.subscribe(Topics.breaker, { group: `test-breakers-${randomUUID()}` }, async (change) => {
      announced.push(change);
    });
    orchestrator = await createFathomApp({ services: ['orchestrator'], bus, database: db, logLevels: false });
    await startAnalyzer();
  }, 120_000);

  afterAll(async () => {
    await analyzer?.close();
    await orchestrator?.close();
    await bus?.close();
    await db?.close();
    await Promise.all([primary, secondary, candidate].map((s) => s?.close()));
  });

  /**
   * `fetch` to the orchestrator, tried again on a reset connection: on a starved machine the
   * client's timers run late and it reuses a keep-alive socket the server has just closed.
   */
  const call = async (path: string, init?: RequestInit): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fetch(`${orchestrator.url}${path}`, init);
      } catch (error) {
        const reset = ((error as Error).cause as NodeJS.ErrnoException | undefined)?.code === 'ECONNRESET';
        if (!reset || attempt === 3) throw error;
      }
    }
  };

  /** The live report; undefined before the campaign's first window closed. */
  const live = async (id: string): Promise<ShadowLiveStatus | undefined> => {
    const body = (await (await call(`/v1/shadow-campaigns/${id}/report`)).json()) as {
      report: StoredShadowCampaign['report'];
    };
    return body.report?.live;
  };

  /**
   * A burst of 20 production requests copied to the campaign, as the shadow gateway copies them
   * (to the orchestrator's mirror receiver), then a pause: some 60 copies a second, more than the
   * probe trickle admits, at little cost to a busy machine.
   */
  async function drive(id: string): Promise<void> {
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const copied = await call(`/v1/shadow-campaigns/${id}/mirror`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'fathom-sim-8b',
            messages: [{ role: 'user', content: `Question ${i % 6}: where is order A-${i % 6}?` }],
          }),
        });
        expect(copied.status).toBe(202);
        await copied.arrayBuffer();
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 250));
  }

  /** Copies production traffic to campaign `id` until `done` holds; fails after a minute. */
  async function until(id: string, description: string, done: () => Promise<boolean>): Promise<void> {
    const started = Date.now();
    while (!(await done())) {
      if (Date.now() - started > 60_000)
        throw new Error(`not within a minute: ${description}: ${JSON.stringify(await live(id))}`);
      await drive(id);
    }
  }

  it('keeps an open candidate breaker open and shedding after the restart, and closes it on recovery', async () => {
    const created = await call('/v1/shadow-campaigns', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'breaker restart',
        primary: { baseUrl: `${primary.url}/v1` },
        secondary: { baseUrl: `${secondary.url}/v1` },
        candidate: { baseUrl: `${candidate.url}/v1` },
        model: 'fathom-sim-8b',
        source: { type: 'live', maxRatePerSec: 100, windowMs: WINDOW_MS },
        concurrency: CONCURRENCY,
        maxTokens: 32,
        onRegression: { windows: 2 },
      }),
    });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as { id: string }).id;
    const runId = shadowRunId(id);
    const key = { target: `${candidate.url}/v1`, layer: 'llm', node: new URL(candidate.url).host };
    const changesOf = () => announced.filter((c) => c.runId === runId).map((c) => `${c.from} -> ${c.to}`);
    try {
      await until(id, 'the breaker opens', async () => (await live(id))?.analyzerBreaker?.state === 'open');
      const opened = (await live(id))!;
      expect(changesOf()).toEqual(['closed -> open']);
      const openedAt = opened.analyzerBreaker!.changes[0].at;

      // A new analyzer on the same store takes over.
      await restartAnalyzer();
      const restartedAt = Date.now();

      // Still regressed: three windows judged since (each a group of 5 or more samples); the
      // signals of the first two reached the new analyzer a window or more ago.
      const judgedSince = async () =>
        ((await live(id))?.windows ?? []).filter(
          (w) => w.endedAt > restartedAt && w.samples >= 5 && w.regressed,
        );
      await until(
        id,
        'three regressed windows after the restart',
        async () => (await judgedSince()).length >= 3,
      );
      const shedding = (await live(id))!;
      expect(shedding.analyzerBreaker!.state).toBe('open');
      // Nothing announced: the new analyzer knows the breaker it took over is open.
      expect(changesOf()).toEqual(['closed -> open']);
      expect(shedding.analyzerBreaker!.changes).toEqual(opened.analyzerBreaker!.changes);
      // Still shed to the probe trickle, the rest counted: 10 replays admitted a window for the
      // one group, plus those admitted in the window before that ended in it (concurrency 8).
      expect(shedding.shed.analyzerBreaker).toBeGreaterThan(opened.shed.analyzerBreaker ?? 0);
      expect(Math.max(...(await judgedSince()).map((w) => w.samples))).toBeLessThanOrEqual(10 + CONCURRENCY);
      expect(await new ShadowBreakerRepository(db).get(runId, key)).toMatchObject({
        state: 'open',
        openedAt,
        since: openedAt,
      });

      // The candidate recovers: the new analyzer probes the breaker the old one opened. Replaced
      // again after the first passing probe, the third analyzer goes on from that probe: two
      // more clean windows close the breaker (a fresh one would never close: clean windows on a
      // closed breaker change nothing).
      expect(
        (await fetch(`${candidate.url}/sim/faults/hallucination_rate`, { method: 'DELETE' })).status,
      ).toBe(200);
      await until(
        id,
        'the breaker half-opens',
        async () => (await live(id))?.analyzerBreaker?.state === 'half-open',
      );
      await restartAnalyzer();
      await until(
        id,
        'the breaker closes',
        async () => (await live(id))?.analyzerBreaker?.state === 'closed',
      );
      const recovered = (await live(id))!;
      expect(changesOf()).toEqual(['closed -> open', 'open -> half-open', 'half-open -> closed']);
      expect(recovered.analyzerBreaker!.changes.map((c) => `${c.from} -> ${c.to}`)).toEqual(changesOf());
      expect(recovered.tier).toBe('ok');
      expect(await new ShadowBreakerRepository(db).get(runId, key)).toMatchObject({
        state: 'closed',
        openedAt,
      });
    } finally {
      await call(`/v1/shadow-campaigns/${id}/stop`, { method: 'POST' });
    }
  }, 240_000);
});
