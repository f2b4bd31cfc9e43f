import { CampaignSpecSchema, type GpuTelemetry, type RequestRecord } from '@fathom/contracts';
import { scrapeSource } from '@fathom/gpu';
import { runShard } from '@fathom/load';
import { startSimTarget } from '@fathom/sim';
import { digestRecord } from '../evidence/record-digest';
import { slowestRequests } from './slowest-requests';

describe('slowest requests joined with the server readings during each (against the simulated target)', () => {
  it("keeps the server's request id and the trace id, and says the queue was deep while the slowest ran", async () => {
    // 12 users on a server that batches 3: requests queue, the sim's requests_waiting shows it.
    const sim = await startSimTarget({
      port: 0,
      host: '127.0.0.1',
      config: { seed: 2, engine: { maxNumSeqs: 3 }, output: { hallucinationRate: 0 } },
    });
    const scrapes: GpuTelemetry[] = [];
    let scraping = true;
    const scraper = (async () => {
      for (let i = 0; scraping; i++) {
        const result = await scrapeSource({ url: `${sim.url}/metrics`, format: 'auto', timeoutMs: 1000 });
        scrapes.push({
          schemaVersion: 1,
          id: `s${i}`,
          campaignId: 'c',
          runId: 'join',
          emittedAt: Date.now(),
          source: 'vllm',
          url: `${sim.url}/metrics`,
          scrapedAt: Date.now(),
          health: result.health,
          samples: result.samples.map(({ gpu, instance, metric, value, unit }) => ({
            gpu,
            instance,
            metric,
            value,
            unit,
          })),
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    try {
      const spec = CampaignSpecSchema.parse({
        name: 'join',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['Name three rivers.'], maxTokens: 24 },
        load: { concurrency: 12, durationMs: 2000 },
      });
      const records: RequestRecord[] = [];
      await runShard({
        spec,
        shard: { index: 0, count: 1 },
        runId: 'join',
        campaignId: 'c',
        generatorId: 'g',
        sink: { record: (r) => records.push(r), window: () => undefined },
        signal: new AbortController().signal,
      });
      scraping = false;
      await scraper;
      expect(records.every((r) => r.serverRequestId && /^[0-9a-f]{32}$/.test(r.traceId ?? ''))).toBe(true);
      const sut = slowestRequests(
        records.map((r) => digestRecord(r, spec)),
        scrapes,
      );
      console.info(sut.map((s) => s.text));
      expect(sut).toHaveLength(5);
      expect(sut[0].e2eMs).toBeGreaterThanOrEqual(sut[4].e2eMs);
      // The ids join with the target's own ground truth.
      const truth = (await (await fetch(`${sim.url}/sim/requests/${sut[0].serverRequestId}`)).json()) as {
        fathomRequestId: string;
      };
      expect(truth.fathomRequestId).toBe(sut[0].requestId);
      expect(sut[0].scrapes).toBeGreaterThan(0);
      expect(sut[0].server.requests_waiting.max).toBeGreaterThan(0);
      expect(sut[0].server.requests_running.max).toBe(3);
      expect(sut[0].text).toMatch(/requests_waiting up to \d+/);
    } finally {
      scraping = false;
      await scraper;
      await sim.close();
    }
  }, 30000);
});
