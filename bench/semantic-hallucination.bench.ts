/**
 * Hallucination-risk precision and recall against the simulated target's planted spans, and the
 * detector's throughput (tokens assessed per second, parse excluded). Prints figures; never fails.
 * Run: node -r ./bench/ts-register.js bench/semantic-hallucination.bench.ts [requests]
 *
 * Measured here (300 responses, 2 shared cores): span recall and precision 1.000, token recall
 * 1.000, token precision 1.000 (top_logprobs 5) / 0.979-0.986 (20); no flag on clean runs;
 * 60k-280k tokens/s assessed. The guard test (libs/semantic/src/monitor/hallucination-recall.int-spec.ts)
 * keeps floors just under: span recall >= 0.98, token recall and precision >= 0.95, no flag clean.
 */
import { startSimTarget } from '@fathom/sim';
import { probeHallucinationRisk } from '../libs/semantic/src/testing/hallucination.probe';

async function main(): Promise<void> {
  const requests = Number(process.argv[2] ?? 400);
  const sim = await startSimTarget({ port: 0, config: { timeScale: 0.005 } });
  try {
    for (const [label, rate] of [
      ['planted (rate 1)', 1],
      ['sim default (rate 0.2)', null],
      ['clean (rate 0)', 0],
    ] as const) {
      sim.faults.clearAll();
      if (rate !== null) sim.faults.set({ kind: 'hallucination_rate', rate });
      for (const top of [5, 20]) {
        const r = await probeHallucinationRisk({
          baseUrl: sim.url,
          requests,
          topLogprobs: top,
          concurrency: 16,
        });
        const f = (v: number | null) => (v === null ? 'n/a' : v.toFixed(3));
        console.log(
          `${label.padEnd(24)} top_logprobs=${String(top).padEnd(2)} responses=${r.score.responses} planted=${r.score.plantedSpans} flagged=${r.score.flaggedSegments} ` +
            `spanRecall=${f(r.score.spanRecall)} spanPrecision=${f(r.score.spanPrecision)} tokenRecall=${f(r.score.tokenRecall)} tokenPrecision=${f(r.score.tokenPrecision)} ` +
            `cleanFlagged=${r.score.cleanResponsesFlagged} tokens/s(assess)=${Math.round(r.tokens / (r.assessMs / 1000))}`,
        );
      }
    }
  } finally {
    await sim.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
