/**
 * Detection benchmark (issue 15 §1): recall, precision, time to name and false alarms per anomaly
 * class over the simulator's planted faults. Each process runs one embedded Fathom (all five
 * services, in-memory bus, PGlite), each run a real campaign against its own simulator;
 * `PARALLEL` runs at a time per process, `PROCS` processes (one Fathom's services share one event
 * loop, so a many-core host needs several processes, not more runs per process).
 * Run: node -r ./bench/ts-register.js bench/detection/detection.bench.ts [SEEDS] [PARALLEL] [RUN_MS] [CELLS] [PROCS]
 *   SEEDS     runs per fault cell (default 10); clean runs: 2 per concurrency of 10 levels
 *   PARALLEL  runs at once per process (default 2)
 *   RUN_MS    length of each run (default 10000)
 *   CELLS     a substring filter on cell names (default: all; '' for all)
 *   PROCS     processes, each with its share of the runs (default 1)
 * Prints the per-class table and writes the outcomes to detection-outcomes.json in the cwd.
 * Says how many runs had a window the client limited (bound, or a starved host): where that is
 * more than a few, the machine (or PARALLEL x PROCS) starved the runs, and the latency classes'
 * recall describes the host. Never fails on its figures.
 */
import { fork } from 'node:child_process';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
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

/** Every run of the matrix, interleaved by seed so that a slow stretch does not fall on one cell. */
function jobsOf(seeds: number, filter: string): { cell: Cell; seed: number }[] {
  const jobs: { cell: Cell; seed: number }[] = [];
  for (const cell of FAULT_CELLS) for (let seed = 1; seed <= seeds; seed++) jobs.push({ cell, seed });
  for (const c of CLEAN_CONCURRENCIES) for (const seed of [1, 2]) jobs.push({ cell: cleanCell(c), seed });
  return jobs.filter((j) => j.cell.name.includes(filter)).sort((a, b) => a.seed - b.seed);
}

const cellByName = new Map<string, Cell>([
  ...FAULT_CELLS.map((c): [string, Cell] => [c.name, c]),
  ...CLEAN_CONCURRENCIES.map((c): [string, Cell] => [cleanCell(c).name, cleanCell(c)]),
]);

const toJson = (outcomes: readonly Outcome[]) =>
  JSON.stringify(
    outcomes.map((o) => ({ ...o, cell: o.cell.name })),
    null,
    1,
  );
const fromJson = (text: string): Outcome[] =>
  (JSON.parse(text) as (Omit<Outcome, 'cell'> & { cell: string })[]).map((o) => ({
    ...o,
    cell: cellByName.get(o.cell)!,
  }));

/** Runs `jobs`, `parallel` at a time, on one embedded Fathom; logs each outcome as it comes. */
async function runJobs(
  jobs: readonly { cell: Cell; seed: number }[],
  parallel: number,
  runMs: number,
  tag: string,
): Promise<Outcome[]> {
  const fathom = await startEmbedded({ dataDir: null, logLevels: ['error'] });
  const outcomes: Outcome[] = [];
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++];
      try {
        const o = await runCell(fathom, job.cell, job.seed, { ...DEFAULT_RUN_OPTIONS, runMs });
        outcomes.push(o);
        const shown = o.named.map((c) => `${c.kind}@${(c.afterOnsetMs / 1000).toFixed(1)}s`).join(' ') || '-';
        const wall = o.wall
          ? ` [${(o.wall.startMs / 1000).toFixed(1)} s to start, ${(o.wall.finishMs / 1000).toFixed(1)} s to report]`
          : '';
        const client = o.client
          ? ` (client: ${o.client.boundWindows}/${o.client.windows} windows bound, ${o.client.starvedWindows} starved, CPU ${(100 * o.client.cpuBusyMedian).toFixed(0)} %, loop delay P99 <= ${o.client.loopDelayP99MaxMs.toFixed(0)} ms)`
          : '';
        console.log(
          `${tag}[${outcomes.length}/${jobs.length} ${((Date.now() - started) / 1000).toFixed(0)} s] ${job.cell.name} #${job.seed} onset ${(o.onsetMs / 1000).toFixed(1)} s, ${o.requests} requests${wall}${client}: ${shown}`,
        );
      } catch (error) {
        console.log(`${tag}${job.cell.name} #${job.seed}: failed: ${(error as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  await fathom.close();
  return outcomes;
}

async function main(): Promise<void> {
  const seeds = Number(process.argv[2] ?? 10);
  const parallel = Number(process.argv[3] ?? 2);
  const runMs = Number(process.argv[4] ?? DEFAULT_RUN_OPTIONS.runMs);
  const filter = process.argv[5] ?? '';
  const procs = Number(process.argv[6] ?? 1);
  for (const [name, value] of Object.entries({ seeds, parallel, runMs, procs }))
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`${name} must be a positive integer, not ${value}`);
  process.env.FATHOM_ANALYZER_SETTLE_MS ??= '3000';
  process.env.FATHOM_GPU_SCRAPE_MS ??= '500';
  // No embedding model: no class here needs one (RAG mismatch is not in this matrix).
  process.env.FATHOM_SEMANTIC_EMBEDDER ??= 'off';
  const jobs = jobsOf(seeds, filter);
  const shard = process.env.DETECTION_SHARD;
  if (shard !== undefined) {
    // A child: its share of the runs, outcomes to the file the parent named.
    const [index, count] = shard.split('/').map(Number);
    const mine = jobs.filter((_, i) => i % count === index);
    writeFileSync(process.env.DETECTION_OUT!, toJson(await runJobs(mine, parallel, runMs, `p${index} `)));
    return;
  }
  const started = Date.now();
  let outcomes: Outcome[];
  if (procs === 1) {
    outcomes = await runJobs(jobs, parallel, runMs, '');
  } else {
    const files = Array.from({ length: procs }, (_, i) => `detection-outcomes.p${i}.json`);
    await Promise.all(
      files.map(
        (out, i) =>
          new Promise<void>((resolve, reject) => {
            const child = fork(__filename, process.argv.slice(2), {
              execArgv: process.execArgv,
              env: { ...process.env, DETECTION_SHARD: `${i}/${procs}`, DETECTION_OUT: out },
            });
            child.on('exit', (code) =>
              code === 0 ? resolve() : reject(new Error(`process ${i} exited ${code}`)),
            );
          }),
      ),
    );
    outcomes = files.flatMap((f) => {
      const o = fromJson(readFileSync(f, 'utf8'));
      unlinkSync(f);
      return o;
    });
  }
  writeFileSync('detection-outcomes.json', toJson(outcomes));
  console.log(
    `\n${jobs.length} runs in ${((Date.now() - started) / 60_000).toFixed(1)} min, ${procs} process(es) x ${parallel} at a time, ${runMs} ms each\n`,
  );
  console.log(formatSummary(summarise(outcomes)));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
