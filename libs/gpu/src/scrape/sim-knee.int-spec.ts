import { request } from 'undici';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import type { NormalisedSample } from '../model/gpu-sample.model';
import { DerivedMetrics, RunGpuDerivations } from '../signals/run-derivations';
import { scrapeSource } from './scrape-source';

/**
 * Against the simulated target's vLLM /metrics and dcgm-exporter /dcgm/metrics: as closed-loop
 * load passes the engine's knee (32 concurrent sequences), KV-cache usage and DRAM activity
 * climb, requests start to wait, and the derived hit-rate variance is there for the report.
 * Seen here: 4 streams kv 0.027, DRAM 0.18, 0 waiting; 48 streams kv 0.22, DRAM 0.41, ~14 waiting.
 */
describe('GPU readings across the sim knee', () => {
  jest.setTimeout(60_000);
  let sim: SimTarget;
  const prompt = Array.from({ length: 200 }, (_, i) => `word${i % 37}`).join(' ');

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.2 } });
  });
  afterAll(async () => sim?.close());

  /** Runs `streams` closed-loop users for `ms` while scraping both endpoints every 100 ms. */
  async function loadAndScrape(streams: number, ms: number, derivations: RunGpuDerivations) {
    const until = Date.now() + ms;
    const user = async (u: number) => {
      for (let i = 0; Date.now() < until; i++) {
        const res = await request(`${sim.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'fathom-sim-8b',
            stream: true,
            max_tokens: 64,
            messages: [{ role: 'user', content: `${u}-${i} ${prompt}` }],
          }),
        });
        await res.body.text();
      }
    };
    const readings: NormalisedSample[][] = [];
    const scraper = async () => {
      await new Promise((r) => setTimeout(r, ms / 3)); // let the batch fill first
      while (Date.now() < until - 100) {
        const [vllm, dcgm] = await Promise.all([
          scrapeSource({ url: `${sim.url}/metrics`, format: 'auto', timeoutMs: 5000 }),
          scrapeSource({ url: `${sim.url}/dcgm/metrics`, format: 'auto', timeoutMs: 5000 }),
        ]);
        expect([vllm.health, dcgm.health]).toEqual(['ok', 'ok']);
        readings.push([...vllm.samples, ...dcgm.samples]);
        derivations.observe(vllm.samples, Date.now());
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await Promise.all([...Array.from({ length: streams }, (_, u) => user(u)), scraper()]);
    const mean = (metric: string) => {
      const values = readings
        .flat()
        .filter((s) => s.metric === metric)
        .map((s) => s.value);
      return values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
    };
    return {
      kv: mean('kv_cache_usage_ratio'),
      dram: mean('dram_active_ratio'),
      waiting: mean('requests_waiting'),
      scrapes: readings.length,
    };
  }

  it('shows KV-cache usage and DRAM activity climbing past 32 streams', async () => {
    const derivations = new RunGpuDerivations();
    const below = await loadAndScrape(4, 3000, derivations);
    const above = await loadAndScrape(48, 3000, derivations);
    expect(below.scrapes).toBeGreaterThanOrEqual(2);
    expect(above.scrapes).toBeGreaterThanOrEqual(2);
    // Floors well under the figures above: the shared CPUs slow the sim's wall clock unevenly.
    expect(above.kv).toBeGreaterThan(below.kv * 1.5);
    expect(above.dram).toBeGreaterThan(below.dram * 1.3);
    expect(above.waiting).toBeGreaterThan(below.waiting);
    const derived = derivations.observe(
      (await scrapeSource({ url: `${sim.url}/metrics`, format: 'auto', timeoutMs: 5000 })).samples,
      Date.now(),
    );
    expect(derived.map((s) => s.metric)).toContain(DerivedMetrics.kvCacheHitRatio);
  });
});
