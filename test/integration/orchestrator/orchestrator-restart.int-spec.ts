import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { RunReportRepository, type StoredRun } from '@fathom/storage';
import type { JsonValue } from '@fathom/storage';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

const ENV_KEYS = [
  'FATHOM_ANALYZER_SETTLE_MS',
  'FATHOM_RECONCILE_INTERVAL_MS',
  'FATHOM_SCHEDULER_TICK_MS',
  'FATHOM_RUN_GRACE_MS',
] as const;

async function until<T>(probe: () => Promise<T>, timeoutMs: number): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
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

describe('orchestrator restart', () => {
  let sim: SimTarget;
  let dataDir: string;
  let stack: EmbeddedFathom | null = null;
  const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } });
    dataDir = await mkdtemp(join(tmpdir(), 'fathom-restart-'));
  });

  afterAll(async () => {
    await stack?.close();
    await sim?.close();
    await rm(dataDir, { recursive: true, force: true });
    for (const k of ENV_KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  it('shows every run in its true state after a restart on the same data dir, and schedules go on', async () => {
    const campaign = (name: string, durationMs: number) => ({
      name,
      target: { baseUrl: `${sim.url}/v1` },
      scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['hello'], maxTokens: 8 },
      load: { concurrency: 2, durationMs },
    });

    // First life: one run completes, one is aborted; the scheduler and the periodic reconciler
    // are kept idle so that what the second life shows is its own doing.
    Object.assign(process.env, {
      FATHOM_ANALYZER_SETTLE_MS: '1000',
      FATHOM_RECONCILE_INTERVAL_MS: '600000',
      FATHOM_SCHEDULER_TICK_MS: '600000',
      FATHOM_RUN_GRACE_MS: '120000',
    });
    stack = await startEmbedded({ dataDir, logLevels: false });
    const first = stack;
    const completed = await post(first.url, '/v1/campaigns', campaign('completes', 400));
    await waitForRun(first.runs, String(completed.runId), { timeoutMs: 20_000 });
    const aborted = await post(first.url, '/v1/campaigns', campaign('aborted', 60_000));
    await until(async () => (await first.runs.get(String(aborted.runId)))?.status === 'running', 10_000);
    await post(first.url, `/v1/runs/${String(aborted.runId)}/abort`, {});

    // What a crash leaves behind: a run whose process died long ago (no events, no report), and
    // a run whose report the analyzer stored but the orchestrator never consumed.
    const campaignId = String(completed.campaignId);
    const orphan = await first.runs.create({ campaignId, trigger: 'api', createdAt: Date.now() - 600_000 });
    await first.runs.transition(orphan.id, 'running', { at: Date.now() - 590_000 });
    const reported = await first.runs.create({ campaignId, trigger: 'api' });
    await first.runs.transition(reported.id, 'running');
    const summary = (await first.runs.get(String(completed.runId)))?.summary;
    expect(summary?.status).toBe('completed');
    await new RunReportRepository(first.database).save(reported.id, {
      schemaVersion: 1,
      runId: reported.id,
      campaignId,
      summary: { ...summary, endedAt: Date.now() } as unknown as JsonValue,
    });
    // A schedule whose first slot comes after the restart.
    const scheduled = await post(first.url, '/v1/campaigns', campaign('scheduled', 300));
    await waitForRun(first.runs, String(scheduled.runId), { timeoutMs: 20_000 });
    const schedule = await post(first.url, '/v1/schedules', {
      campaignId: scheduled.campaignId,
      mode: 'interval',
      intervalMs: 1000,
      startAt: Date.now() + 1500,
    });
    await first.close();
    stack = null;

    // Second life on the same files.
    Object.assign(process.env, { FATHOM_SCHEDULER_TICK_MS: '200', FATHOM_RECONCILE_INTERVAL_MS: '1000' });
    const restartedAt = Date.now();
    stack = await startEmbedded({ dataDir, logLevels: false });
    const second = stack;
    const state = async (id: unknown) => (await second.runs.get(String(id))) as StoredRun;

    expect(await state(completed.runId)).toMatchObject({ status: 'completed' });
    expect((await state(completed.runId)).summary).not.toBeNull();
    expect(await state(aborted.runId)).toMatchObject({ status: 'aborted', reason: 'aborted by request' });
    expect(await state(orphan.id)).toMatchObject({ status: 'failed' });
    expect((await state(orphan.id)).reason).toMatch(/no report .* stopped while it was running/);
    expect(await state(reported.id)).toMatchObject({ status: 'completed' });
    expect((await state(reported.id)).summary?.requests).toBe(summary?.requests);
    const viaApi = (await (await fetch(`${second.url}/v1/runs/${orphan.id}`)).json()) as StoredRun;
    expect(viaApi.status).toBe('failed');

    // The schedule, stored by the first life, starts runs in the second, never two at once.
    const runsOf = () => second.runs.list({ campaignId: String(scheduled.campaignId) });
    await until(
      async () =>
        (await runsOf()).filter((r) => r.trigger === 'schedule' && r.status === 'completed').length >= 2,
      20_000,
    );
    await fetch(`${second.url}/v1/schedules/${String(schedule.id)}`, { method: 'DELETE' });
    const runs = (await runsOf()).sort((a, b) => a.createdAt - b.createdAt);
    const bySchedule = runs.filter((r) => r.trigger === 'schedule');
    expect(bySchedule.every((r) => r.createdAt >= restartedAt)).toBe(true);
    for (let i = 1; i < runs.length; i++) {
      const previousEnd = runs[i - 1].endedAt;
      expect(previousEnd).not.toBeNull();
      expect(runs[i].createdAt).toBeGreaterThanOrEqual(previousEnd as number);
    }
  }, 80_000);
});
