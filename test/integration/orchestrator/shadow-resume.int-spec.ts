import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBus, type Bus } from '@fathom/bus';
import {
  shadowRunId,
  ShadowCampaignInputSchema,
  Topics,
  type ShadowLiveStatus,
  type ShadowSample,
} from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { createFathomApp, type FathomApp } from '@fathom/runtime';
import {
  openDatabase,
  ShadowBreakerRepository,
  ShadowRepository,
  type Database,
  type StoredShadowCampaign,
} from '@fathom/storage';

const LEASE_MS = 1500;
const RENEW_MS = 300;
const WINDOW_MS = 1000;

/** A loopback proxy in front of `targetUrl` that keeps the Authorization header of each request. */
async function startRecordingProxy(
  targetUrl: string,
): Promise<{ url: string; authorizations: string[]; close(): Promise<void> }> {
  const target = new URL(targetUrl);
  const authorizations: string[] = [];
  const server: Server = createServer((req, res) => {
    authorizations.push(req.headers.authorization ?? '');
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (response) => {
        res.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function until<T>(probe: () => Promise<T>, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`${what}: not in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Live shadow campaigns across orchestrator restarts and replicas: orchestrators (the
 * orchestrator service alone, as deployed) on one store and one bus, started and stopped as a
 * restart or a scale-out would, with short leases.
 */
describe('shadow campaigns across orchestrator restarts and replicas', () => {
  let sim: SimTarget;
  let candidate: Awaited<ReturnType<typeof startRecordingProxy>>;
  let database: Database;
  let bus: Bus;
  let shadows: ShadowRepository;
  const apps = new Set<FathomApp>();

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } });
    candidate = await startRecordingProxy(sim.url);
    database = await openDatabase({ kind: 'pglite', dataDir: null });
    bus = await createBus({ kind: 'memory' });
    shadows = new ShadowRepository(database);
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
    await bus?.close();
    await database?.close();
    await candidate?.close();
    await sim?.close();
  });

  /**
   * One orchestrator; `candidateKey` is the value its environment gives the candidate's key
   * reference; `onBus` the bus it is handed (default: the shared one).
   */
  async function orchestrator(
    candidateKey = 'key-1',
    onBus: Bus = bus,
    lease = { ms: LEASE_MS, renewMs: RENEW_MS },
  ): Promise<FathomApp> {
    const app = await createFathomApp({
      services: ['orchestrator'],
      bus: onBus,
      database,
      logLevels: process.env.DEBUG_SHADOW ? ['error', 'warn', 'log'] : false,
      shutdownHooks: false,
      env: {
        ...process.env,
        FATHOM_SHADOW_LEASE_MS: String(lease.ms),
        FATHOM_SHADOW_LEASE_RENEW_MS: String(lease.renewMs),
        FATHOM_SECRET_SHADOW_CANDIDATE: candidateKey,
        // Nothing but the shadow campaigns under test moves.
        FATHOM_RECONCILE_INTERVAL_MS: '600000',
        FATHOM_SCHEDULER_TICK_MS: '600000',
      },
    });
    apps.add(app);
    return app;
  }
  async function close(app: FathomApp): Promise<void> {
    await app.close();
    apps.delete(app);
  }

  const liveInput = () => ({
    name: 'always-on',
    primary: { baseUrl: `${sim.url}/v1` },
    secondary: { baseUrl: `${sim.url}/v1` },
    candidate: { baseUrl: `${candidate.url}/v1`, apiKey: { env: 'FATHOM_SECRET_SHADOW_CANDIDATE' } },
    model: 'fathom-sim-8b',
    maxTokens: 8,
    concurrency: 8,
    source: { type: 'live', maxRatePerSec: 1000, windowMs: WINDOW_MS },
  });

  async function startLive(app: FathomApp): Promise<string> {
    const created = await fetch(`${app.url}/v1/shadow-campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(liveInput()),
    });
    expect(created.status).toBe(201);
    return ((await created.json()) as { id: string }).id;
  }

  const mirror = async (app: FathomApp, id: string, n: number): Promise<number[]> => {
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      const answer = await fetch(`${app.url}/v1/shadow-campaigns/${id}/mirror`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'prod', messages: [{ role: 'user', content: `copy ${i}` }] }),
      });
      await answer.arrayBuffer();
      statuses.push(answer.status);
    }
    return statuses;
  };
  const stop = (app: FathomApp, id: string) =>
    fetch(`${app.url}/v1/shadow-campaigns/${id}/stop`, { method: 'POST' });
  const stored = async (id: string) => (await shadows.get(id)) as StoredShadowCampaign;
  const live = async (id: string) => (await stored(id)).report?.live;
  const replayedAtLeast = (id: string, n: number) =>
    until(
      async () => {
        const status = await live(id);
        return status && status.replayed >= n ? status : null;
      },
      15_000,
      `${n} replayed`,
    );

  it('runs a live campaign on after a restart: copies accepted, secrets resolved again, counts go on', async () => {
    const first = await orchestrator('key-1');
    const id = await startLive(first);
    expect(await mirror(first, id, 6)).toEqual(Array(6).fill(202));
    const before = await replayedAtLeast(id, 6);
    expect(candidate.authorizations.at(-1)).toBe('Bearer key-1');

    await close(first);
    // Nothing runs it now: still running in the store, its last window published on the way out.
    expect(await stored(id)).toMatchObject({ status: 'running' });
    const left = (await live(id)) as ShadowLiveStatus;
    expect(left.replayed).toBe(6);
    const replaysBefore = candidate.authorizations.length;

    // The restarted orchestrator: its environment now holds a rotated key for the same reference.
    const second = await orchestrator('key-2');
    expect(await mirror(second, id, 4)).toEqual(Array(4).fill(202));

    const after = await replayedAtLeast(id, 10);
    expect(after.offered).toBe(10);
    expect(after.replayed).toBe(10);
    // The windows published before the restart are still there, the new ones after them.
    expect(after.windows.slice(0, left.windows.length)).toEqual(left.windows);
    expect(after.windows.length).toBeGreaterThan(left.windows.length);
    expect(before.windows.length).toBeGreaterThan(0);
    // The candidate got the key resolved by the restarted orchestrator, never the stored reference.
    expect(new Set(candidate.authorizations.slice(replaysBefore))).toEqual(new Set(['Bearer key-2']));
    expect(JSON.stringify((await stored(id)).config)).not.toContain('key-');

    expect((await stop(second, id)).status).toBe(200);
    expect(await stored(id)).toMatchObject({ status: 'completed', reason: 'stopped' });
    expect((await stored(id)).report?.live?.replayed).toBe(10);
    await close(second);
  }, 60_000);

  it("takes a dead replica's campaigns over within the lease: the live one runs on, the others fail", async () => {
    const config = (source: Record<string, unknown>) =>
      ShadowCampaignInputSchema.parse({ ...liveInput(), name: 'left by a dead replica', source });
    // What a replica that died (no clean shutdown, so no release) leaves: its leases run out.
    const dead = { owner: 'dead-replica', ttlMs: LEASE_MS };
    const liveLeft = await shadows.create(config(liveInput().source), dead);
    const lastPublished: ShadowLiveStatus = {
      offered: 40,
      replayed: 30,
      shed: { sampled: 0, rate: 10, concurrency: 0, breaker: 0, analyzerBreaker: 0 },
      candidateBreaker: 'closed',
      analyzerBreaker: { state: 'closed', changes: [] },
      tier: 'ok',
      linkedRuns: [],
      windows: [
        {
          startedAt: Date.now() - 2 * WINDOW_MS,
          endedAt: Date.now() - WINDOW_MS,
          samples: 30,
          groups: [],
          regressed: false,
        },
      ],
      hours: [],
    };
    await shadows.updateReport(
      liveLeft.id,
      { samples: 30, similarity: 'not configured', groups: [], live: lastPublished },
      dead.owner,
    );
    const unresolvable = await shadows.create(
      ShadowCampaignInputSchema.parse({
        ...config(liveInput().source),
        candidate: { baseUrl: `${candidate.url}/v1`, apiKey: { env: 'FATHOM_SECRET_NOT_HERE' } },
      }),
      dead,
    );
    const inline = await shadows.create(
      config({ type: 'inline', requests: [{ body: { messages: [{ role: 'user', content: 'hi' }] } }] }),
      dead,
    );
    const died = Date.now();

    const survivor = await orchestrator();
    const failed = await until(
      async () => ((await stored(inline.id)).status === 'failed' ? stored(inline.id) : null),
      10_000,
      'interrupted campaign failed',
    );
    // Taken over once the lease ran out, on the next pass after it (slack for a busy machine).
    expect(Date.now() - died).toBeLessThan(LEASE_MS + RENEW_MS + 2000);
    expect(failed.reason).toMatch(/orchestrator running it restarted .*mid-campaign.* cannot be resumed/);
    expect(failed.report).toMatchObject({ samples: 0 });
    expect(failed.endedAt).not.toBeNull();
    // A live one whose secret reference this orchestrator cannot resolve ends too, saying why.
    expect(await stored(unresolvable.id)).toMatchObject({ status: 'failed' });
    expect((await stored(unresolvable.id)).reason).toMatch(
      /secrets cannot be resolved.*FATHOM_SECRET_NOT_HERE/,
    );

    await until(async () => (await mirror(survivor, liveLeft.id, 1))[0] === 202, 10_000, 'copy accepted');
    await mirror(survivor, liveLeft.id, 2);
    const after = await replayedAtLeast(liveLeft.id, 33);
    expect(after.offered).toBe(43);
    expect(after.shed.rate).toBe(10);
    expect(after.windows[0]).toEqual(lastPublished.windows[0]);
    expect(await stored(liveLeft.id)).toMatchObject({ status: 'running' });

    expect((await stop(survivor, liveLeft.id)).status).toBe(200);
    await close(survivor);
  }, 60_000);

  it("goes on with a crashed replica's window in progress and failing candidate, from the stored samples", async () => {
    const dead = { owner: 'crashed-replica', ttlMs: LEASE_MS };
    const left = await shadows.create(
      ShadowCampaignInputSchema.parse({ ...liveInput(), name: 'left mid-window' }),
      dead,
    );
    const answered = { ok: true, e2eMs: 50, ttftMs: 5, hallucinationRisk: 0 };
    const sample = (candidateOk: boolean): ShadowSample => ({
      endpoint: '/v1/chat/completions',
      intent: 'unlabelled',
      primary: answered,
      secondary: answered,
      candidate: candidateOk ? answered : { ok: false, e2eMs: 5, ttftMs: null, hallucinationRisk: null },
      similarityPrimarySecondary: null,
      similarityPrimaryCandidate: null,
    });
    const request = { messages: [{ role: 'user', content: 'hi' }] };
    const seqs: number[] = [];
    for (const ok of [true, true, false, false])
      seqs.push(await shadows.addSample(left.id, request, sample(ok)));
    // What it published: one window of those 4, the candidate failing twice in a row.
    const ended = Date.now();
    const lastPublished: ShadowLiveStatus = {
      offered: 4,
      replayed: 4,
      shed: { sampled: 0, rate: 0, concurrency: 0, breaker: 0, analyzerBreaker: 0 },
      candidateBreaker: 'closed',
      analyzerBreaker: { state: 'closed', changes: [] },
      tier: 'ok',
      linkedRuns: [],
      windows: [{ startedAt: ended - WINDOW_MS, endedAt: ended, samples: 4, groups: [], regressed: false }],
      hours: [],
      checkpoint: {
        windowsSeq: seqs[3],
        hourSeq: 0,
        lastSeq: seqs[3],
        candidateFailures: 2,
        candidateOpenUntil: 0,
      },
    };
    await shadows.updateReport(
      left.id,
      { samples: 4, similarity: 'not configured', groups: [], live: lastPublished },
      dead.owner,
    );
    // Stored and never published before the crash: three more failures, five in a row.
    for (let i = 0; i < 3; i++) await shadows.addSample(left.id, request, sample(false));
    const replays = candidate.authorizations.length;

    const survivor = await orchestrator();
    const resumed = await until(
      async () => {
        const status = await live(left.id);
        return status && status.windows.length > 1 ? status : null;
      },
      10_000,
      'a window closed after the take-over',
    );
    // The window in progress went on with its three samples, from where the last one ended.
    expect(resumed.windows[1]).toMatchObject({ startedAt: ended, samples: 3 });
    expect(resumed.candidateBreaker).toBe('open');

    // Its breaker open, copies are shed: the failing candidate is not called again.
    expect(await mirror(survivor, left.id, 2)).toEqual([202, 202]);
    const shed = await until(
      async () => {
        const status = await live(left.id);
        return status && status.offered >= 6 ? status : null;
      },
      10_000,
      'copies offered',
    );
    expect(shed).toMatchObject({ replayed: 4, shed: expect.objectContaining({ breaker: 2 }) });
    expect(candidate.authorizations.length).toBe(replays);

    expect((await stop(survivor, left.id)).status).toBe(200);
    await close(survivor);
  }, 60_000);

  it('runs a campaign on one replica of two; the other takes its copies and its stop, and breakers go', async () => {
    const [a, b] = [await orchestrator(), await orchestrator()];
    const id = await startLive(a);
    const breakers = new ShadowBreakerRepository(database);
    const key = { target: `${candidate.url}/v1`, layer: 'llm', node: 'candidate' };
    await breakers.save({
      runId: shadowRunId(id),
      key,
      state: 'open',
      since: Date.now(),
      openedAt: Date.now(),
      outcomes: [],
      probes: [],
      paths: [],
      judgedUntil: Date.now(),
      lastSignalId: 'signal-1',
    });

    // b runs nothing of it, yet accepts its copies once its lease pass has seen it: the bus takes
    // them to a's runner.
    await until(async () => (await mirror(b, id, 1))[0] === 202, 5000, 'copy accepted by b');
    expect(await mirror(b, id, 4)).toEqual(Array(4).fill(202));
    const counted = await replayedAtLeast(id, 5);
    expect(counted.offered).toBe(5);
    // Several lease periods on: still one runner (a renews, b takes nothing over).
    await new Promise((r) => setTimeout(r, 2 * LEASE_MS));
    expect(await mirror(a, id, 1)).toEqual([202]);
    expect((await replayedAtLeast(id, 6)).offered).toBe(6);

    expect((await stop(b, id)).status).toBe(200);
    expect(await stored(id)).toMatchObject({ status: 'completed', reason: 'stopped' });
    expect(await breakers.get(shadowRunId(id), key)).toBeNull();
    // a's runner stops (on b's announcement, or at its next lease pass): its mirror refuses
    // copies, nothing more is replayed.
    await until(async () => (await mirror(a, id, 1))[0] === 404, 5000, 'a refuses copies');
    const replays = candidate.authorizations.length;
    expect(await mirror(b, id, 1)).toEqual([404]);
    await new Promise((r) => setTimeout(r, WINDOW_MS + RENEW_MS));
    expect(candidate.authorizations.length).toBe(replays);
    expect(await stored(id)).toMatchObject({ status: 'completed', reason: 'stopped' });
    await close(a);
    await close(b);
  }, 60_000);

  it('stops the runner on another replica within a second of a stop taken here, not at its lease pass', async () => {
    // Lease passes 30 s apart: only the stop's announcement on the bus can stop a's runner in time.
    const slow = { ms: 90_000, renewMs: 30_000 };
    const a = await orchestrator('key-1', bus, slow);
    const id = await startLive(a);
    expect(await mirror(a, id, 2)).toEqual([202, 202]);
    await replayedAtLeast(id, 2);
    const b = await orchestrator('key-1', bus, slow);
    const stoppedAt = Date.now();
    expect((await stop(b, id)).status).toBe(200);
    await until(async () => (await mirror(a, id, 1))[0] === 404, 5000, 'a refuses copies');
    expect(Date.now() - stoppedAt).toBeLessThan(1000);
    const replays = candidate.authorizations.length;
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    expect(candidate.authorizations.length).toBe(replays);
    expect(await stored(id)).toMatchObject({ status: 'completed', reason: 'stopped' });
    await close(a);
    await close(b);
  }, 60_000);

  it('gives up a campaign it could not start, and another replica takes it over', async () => {
    // A replica whose bus refuses the campaign's subscription (a broker that lost the topic).
    const refusing = Object.create(bus) as Bus;
    refusing.subscribe = (topic, options, handler) =>
      topic.name === Topics.shadowRequest.name
        ? Promise.reject(new Error('subscription refused'))
        : bus.subscribe(topic, options, handler);
    const broken = await orchestrator('key-1', refusing);
    const left = await shadows.create(
      ShadowCampaignInputSchema.parse({ ...liveInput(), name: 'left again' }),
      { owner: 'dead-replica', ttlMs: 0 },
    );
    // The broken replica tries it (and gives it up) on its passes; a healthy one gets it.
    await new Promise((r) => setTimeout(r, 2 * RENEW_MS));
    const healthy = await orchestrator();
    // Copies sent while nobody runs it have no runner to reach (the in-memory bus keeps them only
    // for a group that subscribed): one each time until one is replayed.
    await until(
      async () => {
        await mirror(healthy, left.id, 1);
        return ((await live(left.id))?.replayed ?? 0) > 0;
      },
      10_000,
      'replayed by the healthy replica',
    );
    expect(await stored(left.id)).toMatchObject({ status: 'running' });
    expect((await stop(healthy, left.id)).status).toBe(200);
    await close(broken);
    await close(healthy);
  }, 60_000);
});
