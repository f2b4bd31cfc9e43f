/**
 * Detection benchmark (issue 15 §1): recall, precision, time to name and false alarms per anomaly
 * class over the simulator's planted faults. One embedded Fathom (all five services, in-memory
 * bus, PGlite), each run a real campaign against its own simulator; `PARALLEL` runs at a time.
 * Run: node -r ./bench/ts-register.js bench/detection/detection.bench.ts [SEEDS] [PARALLEL] [RUN_MS] [CELLS]
 *   SEEDS     runs per fault cell (default 10); clean runs: 2 per concurrency of 10 levels
 *   PARALLEL  runs at once (default 3)
 *   RUN_MS    length of each run (default 10000)
 *   CELLS     a substring filter on cell names (default: all)
 * Prints the per-class table and writes the outcomes to detection-outcomes.json in the cwd.
 * Never fails on its figures.
 */
import { writeFileSync } from 'node:fs';
import { startEmbedded } from '@fathom/runtime';
import {
  CLEAN_CONCURRENCIES,
  DEFAULT_RUN_OPTIONS,
  FAULT_CELLS,
  cleanCell,
  formatSummary,
  runCell,
  summarise,
  type Cell,
  type Outcome,
} from './detection-matrix';

async function main(): Promise<void> {
  const seeds = Number(process.argv[2] ?? 10);
  const parallel = Number(process.argv[3] ?? 3);
  const runMs = Number(process.argv[4] ?? DEFAULT_RUN_OPTIONS.runMs);
  const filter = process.argv[5] ?? '';
  process.env.FATHOM_ANALYZER_SETTLE_MS ??= '3000';
  process.env.FATHOM_GPU_SCRAPE_MS ??= '500';
  // No embedding model: no class here needs one (RAG mismatch is not in this matrix).
  process.env.FATHOM_SEMANTIC_EMBEDDER ??= 'off';
  const jobs: { cell: Cell; seed: number }[] = [];
  for (const cell of FAULT_CELLS) for (let seed = 1; seed <= seeds; seed++) jobs.push({ cell, seed });
  for (const c of CLEAN_CONCURRENCIES) for (const seed of [1, 2]) jobs.push({ cell: cleanCell(c), seed });
  const selected = jobs.filter((j) => j.cell.name.includes(filter));
  // Interleave cells so a slow stretch of the machine does not fall on one cell.
  selected.sort((a, b) => a.seed - b.seed);
  const fathom = await startEmbedded({ dataDir: null, logLevels: ['error'] });
  const outcomes: Outcome[] = [];
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < selected.length) {
      const job = selected[next++];
      try {
        const o = await runCell(fathom, job.cell, job.seed, { ...DEFAULT_RUN_OPTIONS, runMs });
        outcomes.push(o);
        const shown = o.named.map((c) => `${c.kind}@${(c.afterOnsetMs / 1000).toFixed(1)}s`).join(' ') || '-';
        console.log(
          `[${outcomes.length}/${selected.length} ${((Date.now() - started) / 1000).toFixed(0)} s] ${job.cell.name} #${job.seed} onset ${(o.onsetMs / 1000).toFixed(1)} s, ${o.requests} requests: ${shown}`,
        );
      } catch (error) {
        console.log(`${job.cell.name} #${job.seed}: failed: ${(error as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  await fathom.close();
  writeFileSync(
    'detection-outcomes.json',
    JSON.stringify(
      outcomes.map((o) => ({ ...o, cell: o.cell.name })),
      null,
      1,
    ),
  );
  console.log(
    `\n${selected.length} runs in ${((Date.now() - started) / 60_000).toFixed(1)} min, ${parallel} at a time, ${runMs} ms each\n`,
  );
  console.log(formatSummary(summarise(outcomes)));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
