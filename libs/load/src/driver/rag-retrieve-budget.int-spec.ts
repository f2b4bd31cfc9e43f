import { CampaignSpecSchema } from '@fathom/contracts';
import { startSimProcess } from '../__fixtures__/sim-process';
import { runShard } from '../engine/run-shard';
import { quantilesFromHistogram } from '../measure/latency-histogram.util';
import { mergeWindows, type WindowSnapshot } from '../measure/window.snapshot';

/**
 * Issue 3: the simulated retrieve layer's 16-concurrency P99 sits near the spec's 145 ms budget
 * at the default index size (10,000 x 64), top-100, real time. The sim runs in its own process so
 * the P99 is the target's, not two event loops sharing one thread.
 */
describe('simulated retrieve layer against the 145 ms budget', () => {
  it('has a top-100 P99 near 145 ms at 16 concurrent', async () => {
    const sim = await startSimProcess({ timeScale: 1 });
    try {
      const spec = CampaignSpecSchema.parse({
        name: 'retrieve-budget',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: {
          type: 'rag',
          layer: 'retrieve',
          k: 100,
          dataset: {
            type: 'inline',
            prompts: ['refund policy for damaged goods', 'gpu memory limits', 'shipping to norway'],
          },
        },
        load: { concurrency: 16, durationMs: 3000 },
      });
      const windows: WindowSnapshot[] = [];
      const sut = await runShard({
        spec,
        shard: { index: 0, count: 1 },
        runId: 'r',
        campaignId: 'c',
        generatorId: 'g',
        sink: { record: () => undefined, window: (w) => void windows.push(w) },
        signal: new AbortController().signal,
      });
      // The first window holds the warm-up (16 connections opened at once, JIT): left out.
      const merged = mergeWindows(windows.slice(1));
      const e2e = quantilesFromHistogram(merged.histograms.e2e);
      process.stdout.write(
        `retrieve k=100 c=16: n=${merged.requests} p50=${(e2e.p50 ?? NaN).toFixed(1)} p99=${(e2e.p99 ?? NaN).toFixed(1)} ms\n`,
      );
      expect(sut.errors).toBe(0);
      expect(merged.requests).toBeGreaterThan(100);
      // Band 90-260 ms around the 145 ms budget. The model alone (8 workers, service 45 ms median
      // x lognormal 0.25, closed loop of 16) gives P99 ~130 ms; measured here with HTTP on a
      // 2-core machine at load average ~5: 148-178 ms. Below 90 ms the queue or the per-k and
      // per-size terms stopped charging (service alone has P99 ~80 ms); 260 ms (1.8 x budget)
      // leaves room for a starved runner (timers fire late, the sim's scan waits for a core)
      // while still failing once the whole service time roughly doubles (model P99 ~260 ms then).
      expect(e2e.p99 ?? 0).toBeGreaterThan(90);
      expect(e2e.p99 ?? Infinity).toBeLessThan(260);
    } finally {
      await sim.close();
    }
  });
});
