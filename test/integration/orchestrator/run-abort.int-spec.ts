import { envelope, Topics, type SloTierChange } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';
import { startCountingProxy, type CountingProxy } from './counting-proxy.test-util';

async function until<T>(probe: () => T | Promise<T>, timeoutMs: number): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('POST /v1/runs/:id/abort', () => {
  let sim: SimTarget;
  let proxy: CountingProxy;
  let sut: EmbeddedFathom;

  const savedBackoff = process.env.FATHOM_RERUN_BACKOFF_MS;

  beforeAll(async () => {
    process.env.FATHOM_ANALYZER_SETTLE_MS = '1000';
    process.env.FATHOM_RERUN_BACKOFF_MS = '0';
    // Real time: a 512-token answer takes seconds, so requests are in flight when the abort lands.
    sim = await startSimTarget({ port: 0, config: { timeScale: 1 } });
    proxy = await startCountingProxy(sim.url);
    sut = await startEmbedded({ dataDir: null, logLevels: false });
  });

  afterAll(async () => {
    if (savedBackoff === undefined) delete process.env.FATHOM_RERUN_BACKOFF_MS;
    else process.env.FATHOM_RERUN_BACKOFF_MS = savedBackoff;
    await sut?.close();
    await proxy?.close();
    await sim?.close();
  });

  it('stops new requests and cancels those in flight within one second', async () => {
    const created = await fetch(`${sut.url}/v1/campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'abort me',
        target: { baseUrl: `${proxy.url}/v1` },
        scenario: {
          type: 'chat',
          model: 'fathom-sim-8b',
          prompts: ['Tell me a long story.'],
          maxTokens: 512,
        },
        load: { concurrency: 8, durationMs: 60_000 },
      }),
    });
    expect(created.status).toBe(201);
    const { runId } = (await created.json()) as { runId: string };
    await until(() => proxy.open() >= 8, 10_000);

    const abortAt = Date.now();
    const response = await fetch(`${sut.url}/v1/runs/${runId}/abort`, { method: 'POST' });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ id: runId, aborted: true, status: 'aborted' });
    await until(() => proxy.open() === 0, 1_000);
    const drainedMs = Date.now() - abortAt;
    await new Promise((r) => setTimeout(r, 1_500));

    const late = proxy.arrivals.filter((t) => t > abortAt + 1_000);
    expect(late).toEqual([]);
    expect(proxy.open()).toBe(0);
    expect(drainedMs).toBeLessThanOrEqual(1_000);
    const run = await waitForRun(sut.runs, runId, { timeoutMs: 15_000, graceWithoutSummaryMs: 5_000 });
    expect(run.status).toBe('aborted');
    expect(run.reason).toBe('aborted by request');
    console.log(
      `abort: ${proxy.arrivals.length} requests sent, in-flight drained ${drainedMs} ms after the call`,
    );
  }, 40_000);

  it('stops every shard when one stopped on slo.abortOnFail, and ends the run slo-failed, not aborted', async () => {
    const created = await fetch(`${sut.url}/v1/campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'thresholds stop the run',
        target: { baseUrl: `${proxy.url}/v1` },
        scenario: {
          type: 'chat',
          model: 'fathom-sim-8b',
          prompts: ['Tell me a long story.'],
          maxTokens: 512,
        },
        load: { concurrency: 4, durationMs: 60_000, shards: 2 },
      }),
    });
    const { runId, campaignId } = (await created.json()) as { runId: string; campaignId: string };
    await until(() => proxy.open() >= 2, 20_000);
    // What a shard publishes when its own thresholds failed (the other shard's did not).
    const stoppedAt = Date.now();
    await sut.bus.publish(Topics.runLifecycle, {
      ...envelope(campaignId, runId),
      phase: 'shard-finished',
      shard: { index: 1, count: 2 },
      generatorId: 'another-generator',
      counts: { sent: 0, completed: 0, errors: 0, dropped: 0, recordsPublished: 0, windowsPublished: 0 },
      reason: 'P99 4000.0 ms > 1 ms',
      endReason: 'slo-failed',
    });
    await until(() => proxy.open() === 0, 5_000);
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    const run = await waitForRun(sut.runs, runId, { timeoutMs: 20_000, graceWithoutSummaryMs: 5_000 });
    expect(run.status).not.toBe('aborted');
    expect(run.summary?.endReason).toBe('slo-failed');
  }, 40_000);

  it('refuses to abort a run that already ended', async () => {
    const created = await fetch(`${sut.url}/v1/campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'short',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['hi'], maxTokens: 4 },
        load: { concurrency: 1, durationMs: 300 },
      }),
    });
    const { runId } = (await created.json()) as { runId: string };
    const run = await waitForRun(sut.runs, runId, { timeoutMs: 15_000 });
    expect(run.status).toBe('completed');

    const response = await fetch(`${sut.url}/v1/runs/${runId}/abort`, { method: 'POST' });

    expect(await response.json()).toEqual({ id: runId, aborted: false, status: 'completed' });
    expect((await sut.runs.get(runId))?.status).toBe('completed');
  }, 30_000);

  it('never starts a rerun of an aborted run, whatever tier changes it saw', async () => {
    const created = await fetch(`${sut.url}/v1/campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'abort, no rerun',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['Tell me a story.'], maxTokens: 64 },
        load: { concurrency: 2, durationMs: 60_000 },
        reruns: { maxReruns: 3, cooldownMs: 0 },
      }),
    });
    const { runId, campaignId } = (await created.json()) as { runId: string; campaignId: string };
    await until(async () => (await sut.runs.get(runId))?.status === 'running', 10_000);
    // A tier change while the run goes (stored as its rerun request), and one after the abort.
    const change = (from: string, to: string): SloTierChange => ({
      ...envelope(campaignId, runId),
      from,
      to,
      reason: `${from} missed: availability 0.00 % < 99.95 %`,
      figures: {},
    });
    await sut.bus.publish(Topics.sloTier, change('SLO-0', 'SLO-1'));
    await new Promise((r) => setTimeout(r, 300));

    const response = await fetch(`${sut.url}/v1/runs/${runId}/abort`, { method: 'POST' });
    expect(response.status).toBe(202);
    await sut.bus.publish(Topics.sloTier, change('SLO-1', 'SLO-breach'));
    const run = await waitForRun(sut.runs, runId, { timeoutMs: 15_000, graceWithoutSummaryMs: 5_000 });
    expect(run.status).toBe('aborted');
    // The cool-down is 0 and the backoff off: a rerun would have started within a second.
    await new Promise((r) => setTimeout(r, 3_000));

    const runs = await sut.runs.list({ campaignId });
    expect(runs.map((r) => r.trigger)).toEqual(['api']);
  }, 40_000);
});
