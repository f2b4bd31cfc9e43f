import OpenAI from 'openai';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { startShadowGateway, type ShadowGateway } from '@fathom/orchestrator';
import type { StoredShadowCampaign } from '@fathom/storage';
import { startCountingProxy, type CountingProxy } from './counting-proxy.test-util';

// Model ms -> wall ms; 0.1 keeps a 16-token answer near 25 ms wall.
const TIME_SCALE = 0.1;
const WINDOW_MS = 2000;

/**
 * Live shadow testing end to end: the official openai client talks to the gateway in front of
 * the primary; copies go through the orchestrator's mirror receiver to a live campaign that
 * replays them against primary, secondary and candidate within its caps.
 */
describe('live shadow campaigns from mirrored traffic', () => {
  let primary: SimTarget;
  let secondary: SimTarget;
  let clean: SimTarget;
  let slower: SimTarget;
  let candidateProxy: CountingProxy;
  let sut: EmbeddedFathom;

  beforeAll(async () => {
    const sim = (faults: unknown[] = []) =>
      startSimTarget({ port: 0, config: { timeScale: TIME_SCALE, faults } as never });
    [primary, secondary, clean, slower] = await Promise.all([
      sim(),
      sim(),
      sim(),
      // Every decode step 40 model ms slower: a latency regression.
      sim([{ kind: 'latency_spike', addMs: 40 }]),
    ]);
    candidateProxy = await startCountingProxy(clean.url);
    sut = await startEmbedded({ dataDir: null, logLevels: false });
  });

  afterAll(async () => {
    await sut?.close();
    await candidateProxy?.close();
    await Promise.all([primary, secondary, clean, slower].map((s) => s?.close()));
  });

  async function liveCampaign(candidateUrl: string, source: Record<string, unknown> = {}, extra = {}) {
    const created = await fetch(`${sut.url}/v1/shadow-campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'live check',
        primary: { baseUrl: `${primary.url}/v1` },
        secondary: { baseUrl: `${secondary.url}/v1` },
        candidate: { baseUrl: `${candidateUrl}/v1` },
        model: 'fathom-sim-8b',
        source: { type: 'live', maxRatePerSec: 50, windowMs: WINDOW_MS, ...source },
        concurrency: 4,
        maxTokens: 16,
        ...extra,
      }),
    });
    expect(created.status).toBe(201);
    return ((await created.json()) as { id: string }).id;
  }

  const report = async (id: string) =>
    (await (await fetch(`${sut.url}/v1/shadow-campaigns/${id}/report`)).json()) as {
      status: string;
      reason: string | null;
      report: StoredShadowCampaign['report'];
    };

  const stop = (id: string) => fetch(`${sut.url}/v1/shadow-campaigns/${id}/stop`, { method: 'POST' });

  async function drive(gateway: ShadowGateway, requests: number): Promise<string[]> {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'prod-key', maxRetries: 0 });
    const answers: string[] = [];
    for (let i = 0; i < requests; i++) {
      const answer = await client.chat.completions.create({
        model: 'fathom-sim-8b',
        messages: [{ role: 'user', content: `Question ${i % 8}: summarise the quarterly report.` }],
        max_tokens: 16,
      });
      answers.push(answer.choices[0].message.content ?? '');
    }
    return answers;
  }

  it('names a latency regression of the candidate within a minute, and a clean candidate raises nothing', async () => {
    const regressed = await liveCampaign(slower.url);
    const cleanId = await liveCampaign(clean.url);
    const gateways = await Promise.all(
      [regressed, cleanId].map((id) =>
        startShadowGateway({
          host: '127.0.0.1',
          port: 0,
          primary: primary.url,
          mirror: { url: `${sut.url}/v1/shadow-campaigns/${id}/mirror` },
        }),
      ),
    );
    try {
      const started = Date.now();
      let named = false;
      while (!named && Date.now() - started < 60_000) {
        await Promise.all(gateways.map((g) => drive(g, 10)));
        named = (await report(regressed)).report?.live?.tier === 'regressed';
      }
      expect(named).toBe(true);
      const live = (await report(regressed)).report!.live!;
      const flagged = live.windows.filter((w) => w.regressed).at(-1)!;
      expect(flagged.groups.flatMap((g) => g.differences.map((d) => d.metric))).toContain('e2eMs');
      // The clean candidate, judged over the same windows, never regressed.
      const cleanLive = (await report(cleanId)).report!.live!;
      expect(cleanLive.windows.filter((w) => w.samples > 0).length).toBeGreaterThan(0);
      expect(cleanLive.tier).toBe('ok');
      expect(cleanLive.replayed).toBeGreaterThan(0);
    } finally {
      await Promise.all(gateways.map((g) => g.close()));
      await Promise.all([regressed, cleanId].map(stop));
    }
  }, 90_000);

  it('answers a burst of mirrored copies at once and replays no more than its caps allow', async () => {
    const id = await liveCampaign(clean.url, { maxRatePerSec: 5 });
    const body = (i: number) =>
      JSON.stringify({ model: 'prod', messages: [{ role: 'user', content: `burst ${i}` }] });
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        fetch(`${sut.url}/v1/shadow-campaigns/${id}/mirror`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: body(i),
        }).then(async (r) => {
          await r.arrayBuffer(); // a mirror discards the answer
          return r.status;
        }),
      ),
    );
    const elapsedMs = performance.now() - started;
    expect(answers.every((s) => s === 202)).toBe(true);
    // Not a JSON chat request: refused, and nothing else is affected.
    const bad = await fetch(`${sut.url}/v1/shadow-campaigns/${id}/mirror`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"prompt":"no messages"}',
    });
    expect(bad.status).toBe(400);
    await new Promise((r) => setTimeout(r, WINDOW_MS + 500));
    const live = (await report(id)).report!.live!;
    expect(live.offered).toBe(200);
    // Token bucket: at most one second's worth at once plus 5/s since.
    const allowed = 5 + Math.ceil(((elapsedMs + WINDOW_MS + 500) / 1000) * 5);
    expect(live.replayed).toBeLessThanOrEqual(allowed);
    expect(live.shed.rate + live.shed.concurrency).toBeGreaterThanOrEqual(200 - allowed);
    expect(live.replayed + live.shed.rate + live.shed.concurrency + live.shed.breaker).toBe(200);
    await stop(id);
  }, 30_000);

  it('takes a batch of mirrored copies as the gateway sends them, each as the mirror route would', async () => {
    const id = await liveCampaign(clean.url, { maxRatePerSec: 5 });
    const batch = (copies: unknown[]) =>
      fetch(`${sut.url}/v1/shadow-campaigns/${id}/mirror/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ copies }),
      });
    const copy = (i: number) => ({
      body: { model: 'prod', messages: [{ role: 'user', content: `batched ${i}` }] },
      intent: `intent-${i % 2}`,
    });
    const answer = await batch([
      ...Array.from({ length: 5 }, (_, i) => copy(i)),
      { body: { prompt: 'no messages' } },
    ]);
    expect(answer.status).toBe(202);
    expect(await answer.json()).toEqual({ accepted: 5, invalid: 1 });
    // The envelope itself wrong: refused whole, naming why.
    const empty = await batch([]);
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { message: string }).message).toMatch(/^not a mirror batch: copies: /);
    const tooMany = await batch(Array.from({ length: 257 }, (_, i) => copy(i)));
    expect(tooMany.status).toBe(400);
    const stray = await fetch(`${sut.url}/v1/shadow-campaigns/${id}/mirror/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ copies: [copy(0)], extra: true }),
    });
    expect(stray.status).toBe(400);
    await new Promise((r) => setTimeout(r, WINDOW_MS + 500));
    expect((await report(id)).report!.live!.offered).toBe(5);
    await stop(id);
    const gone = await batch([copy(9)]);
    expect(gone.status).toBe(404);
  }, 30_000);

  it('stops mirroring within a second of the kill switch', async () => {
    const id = await liveCampaign(candidateProxy.url);
    const post = () =>
      fetch(`${sut.url}/v1/shadow-campaigns/${id}/mirror`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'prod', messages: [{ role: 'user', content: 'keep going' }] }),
      });
    // A steady feed, as a gateway in front of production would send.
    let feeding = true;
    const feed = (async () => {
      while (feeding) {
        await post();
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await new Promise((r) => setTimeout(r, 1000));
    expect(candidateProxy.arrivals.length).toBeGreaterThan(0);
    const asked = performance.now();
    const stopped = await stop(id);
    const stopMs = performance.now() - asked;
    expect(stopped.status).toBe(200);
    expect(stopMs).toBeLessThan(1000);
    const stoppedAt = Date.now();
    await new Promise((r) => setTimeout(r, 1000));
    feeding = false;
    await feed;
    // Nothing reached the candidate after the stop answered; the mirror now refuses copies.
    expect(candidateProxy.arrivals.filter((t) => t > stoppedAt)).toEqual([]);
    expect((await post()).status).toBe(404);
    const ended = await report(id);
    expect(ended).toMatchObject({ status: 'completed', reason: 'stopped' });
  }, 30_000);

  it('starts a run of the linked campaign when the regression lasts', async () => {
    const linked = await fetch(`${sut.url}/v1/campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'capacity check after a shadow regression',
        target: { baseUrl: `${slower.url}/v1` },
        scenario: { type: 'chat', prompts: ['hello'], maxTokens: 8 },
        load: { concurrency: 1, durationMs: 1000 },
        // Its 1 s first run is an invalid measurement (no steady state), and the rerun that
        // would follow 5 s later is an open run the shadow regression coalesces into.
        reruns: { maxReruns: 0 },
      }),
    });
    expect(linked.status).toBe(201);
    const { campaignId, runId: first } = (await linked.json()) as { campaignId: string; runId: string };
    // Storing the campaign ran it once: let that run end, so the regression starts a new one.
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const { status } = (await (await fetch(`${sut.url}/v1/runs/${first}`)).json()) as { status: string };
      if (status !== 'pending' && status !== 'running') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const id = await liveCampaign(slower.url, {}, { onRegression: { windows: 1, campaignId } });
    const gateway = await startShadowGateway({
      host: '127.0.0.1',
      port: 0,
      primary: primary.url,
      mirror: { url: `${sut.url}/v1/shadow-campaigns/${id}/mirror` },
    });
    try {
      const started = Date.now();
      let runs: string[] = [];
      while (runs.length === 0 && Date.now() - started < 60_000) {
        await drive(gateway, 10);
        runs = (await report(id)).report?.live?.linkedRuns ?? [];
      }
      expect(runs).toHaveLength(1);
      const run = (await (await fetch(`${sut.url}/v1/runs/${runs[0]}`)).json()) as {
        trigger: string;
        campaignId: string;
        reason: string;
      };
      expect(run).toMatchObject({ trigger: 'shadow', campaignId });
      expect(run.reason).toMatch(/candidate regressed/);
    } finally {
      await gateway.close();
      await stop(id);
    }
  }, 150_000);
});
