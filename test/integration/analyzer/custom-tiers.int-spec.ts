import { startSimTarget, type SimTarget } from '@fathom/sim';
import { Topics, type CampaignSpecInput, type SloTierChange } from '@fathom/contracts';
import type { RunReportDocument } from '@fathom/analysis';
import { RunReportRepository } from '@fathom/storage';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

/**
 * A campaign with its own tiers (`slo.tiers`) on the embedded stack against the simulated target:
 * no chat answer comes back within 1 ms, so the strict "gold" tier cannot hold, while the lax
 * "bronze" one does; the run must end in bronze, and every tier change published and reported
 * must use the campaign's names, with the objective and figures that caused it.
 */
describe('analyzer with a campaign that defines its own tiers', () => {
  jest.setTimeout(60_000);
  let sut: EmbeddedFathom;
  let sim: SimTarget;
  const tierEvents: SloTierChange[] = [];

  beforeAll(async () => {
    process.env.FATHOM_ANALYZER_SETTLE_MS = '3000';
    sut = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    await sut.bus.subscribe(Topics.sloTier, { group: 'test-tiers' }, async (e) => void tierEvents.push(e));
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.25 } });
  });

  afterAll(async () => {
    await sut?.close();
    await sim?.close();
  });

  it('ends the run in the campaign tier whose objectives hold, named as the campaign names it', async () => {
    const spec: CampaignSpecInput = {
      name: 'custom tiers',
      target: { baseUrl: `${sim.url}/v1` },
      scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['Name three rivers.'], maxTokens: 16 },
      load: { concurrency: 2, durationMs: 5_000 },
      slo: {
        tiers: [
          {
            name: 'gold',
            objectives: [
              { kind: 'availability', min: 0.999 },
              { kind: 'latency', metric: 'correctedE2e', quantile: 'p99', maxMs: 1 },
            ],
          },
          {
            name: 'bronze',
            objectives: [
              { kind: 'availability', min: 0.5 },
              { kind: 'latency', metric: 'correctedE2e', quantile: 'p99', maxMs: 30_000 },
            ],
          },
        ],
      },
      reruns: { maxReruns: 0, cooldownMs: 0 },
    };
    const { runId } = await sut.campaigns.submit(spec as never, 'api');
    await waitForRun(sut.runs, runId, { timeoutMs: 30_000 });
    const stored = await sut.fathom.app.get(RunReportRepository).latest(runId);
    const document = stored!.document as unknown as RunReportDocument;

    const published = tierEvents.filter((e) => e.runId === runId);
    const detail = JSON.stringify(published.map((e) => [e.from, e.to, e.objective, e.figures]));
    expect({ final: document.tiers.final, detail }).toEqual({ final: 'bronze', detail });
    expect(document.summary.tier).toBe('bronze');
    for (const e of published) {
      expect(['gold', 'bronze']).toContain(e.to);
      if (e.from !== null) expect(['gold', 'bronze']).toContain(e.from);
    }
    // Entering bronze (from gold, or assigned at once) names the gold objective that failed and its figures.
    const intoBronze = published.filter((e) => e.to === 'bronze').pop()!;
    expect(intoBronze.objective).toBe('correctedE2e p99');
    expect(intoBronze.figures).toMatchObject({ threshold: 1, value: expect.any(Number) });
    expect(intoBronze.figures.value).toBeGreaterThan(1);
    // The report judges the whole run against the campaign's tiers, not SLO-0 and SLO-1.
    expect(Object.keys(document.objectives)).toEqual(['gold', 'bronze']);
    expect(document.objectives.gold.find((o) => o.objective === 'correctedE2e p99')?.ok).toBe(false);
    expect(document.objectives.bronze.every((o) => o.ok)).toBe(true);
  });
});
