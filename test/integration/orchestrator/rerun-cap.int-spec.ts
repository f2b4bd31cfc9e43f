import { startSimTarget, type SimTarget } from '@fathom/sim';
import type { CampaignSpecInput } from '@fathom/contracts';
import { waitFor } from '@fathom/testing';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';

/**
 * A run whose SLO tier or circuit breaker changes asks for a rerun once it has ended; reruns stop
 * at the campaign's cap however many changes the runs see. The target fails every request for 2 s out of every
 * 5 s, so every run (7 s) sees its tier change at least once.
 */
describe('reruns on tier and breaker changes', () => {
  jest.setTimeout(150_000);
  let sim: SimTarget;
  let fathom: EmbeddedFathom;
  let flapper: NodeJS.Timeout;
  const saved = process.env.FATHOM_RERUN_BACKOFF_MS;

  beforeAll(async () => {
    process.env.FATHOM_RERUN_BACKOFF_MS = '0';
    sim = await startSimTarget({ port: 0 });
    fathom = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    const flap = () => sim.faults.set({ kind: 'http_5xx', rate: 1, status: 503, durationMs: 2000 });
    flapper = setInterval(flap, 5000);
  });

  afterAll(async () => {
    clearInterval(flapper);
    await fathom?.close();
    await sim?.close();
    if (saved === undefined) delete process.env.FATHOM_RERUN_BACKOFF_MS;
    else process.env.FATHOM_RERUN_BACKOFF_MS = saved;
  });

  it('starts exactly the configured number of reruns', async () => {
    const spec: CampaignSpecInput = {
      name: 'flapping target',
      target: { baseUrl: `${sim.url}/v1` },
      scenario: { type: 'chat', prompts: ['Say hello.'], maxTokens: 8 },
      load: { concurrency: 4, durationMs: 7000 },
      reruns: { maxReruns: 2, cooldownMs: 0 },
    };
    const { campaignId } = await fathom.campaigns.submit(spec, 'api');
    const ended = (status: string) => ['completed', 'failed', 'aborted'].includes(status);

    await waitFor(
      async () => {
        const runs = await fathom.runs.list({ campaignId });
        return runs.filter((r) => r.trigger === 'rerun').length === 2 && runs.every((r) => ended(r.status));
      },
      { timeoutMs: 120_000, intervalMs: 500, description: 'two reruns, all ended' },
    );
    // The last rerun saw tier changes too: give a third rerun every chance to (wrongly) start.
    await new Promise((resolve) => setTimeout(resolve, 4000));

    const runs = await fathom.runs.list({ campaignId });
    const reruns = runs.filter((r) => r.trigger === 'rerun');
    expect(runs).toHaveLength(3);
    expect(reruns).toHaveLength(2);
    for (const rerun of reruns) {
      expect(rerun.parentRunId).not.toBeNull();
      expect(rerun.reason).toMatch(/^(tier|breaker) /);
    }
  });
});
