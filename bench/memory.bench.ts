/**
 * Memory of embedded Fathom (`fathom up`: five services, in-memory bus, PGlite on disk) over one
 * long run and over many short ones, against the simulated target in a child process (its own
 * memory is not counted). RSS and V8 heap are read after a full GC (--expose-gc) each time.
 * Run: node --expose-gc -r ./bench/ts-register.js bench/memory.bench.ts [longSeconds=180]
 *        [shortRuns=20] [shortSeconds=5] [streams=48]
 *      (the long figure: longSeconds=1200, 20 minutes). Never fails on the figures.
 * Goal (issue 14): flat within 10 % over the long run (from its first minute to its end) and
 * across the short runs (after the first to after the last).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbedded, waitForRun } from '@fathom/runtime';
import { startSimProcess } from './detection/sim-process';

const longSeconds = Number(process.argv[2] ?? 180);
const shortRuns = Number(process.argv[3] ?? 20);
const shortSeconds = Number(process.argv[4] ?? 5);
const streams = Number(process.argv[5] ?? 48);
const SAMPLE_EVERY_MS = 15_000;

interface Reading {
  readonly rssMb: number;
  readonly heapMb: number;
  /** PGlite's WASM heap (it never shrinks), MB; null for PostgreSQL. */
  readonly wasmMb: number | null;
  /** Memory outside the V8 heap that V8 knows of (Buffers, ArrayBuffers), MB. */
  readonly externalMb: number;
}

let database: { wasmHeapBytes?: () => number } | null = null;

function read(): Reading {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  const wasm = database?.wasmHeapBytes?.() ?? null;
  return {
    rssMb: m.rss / 2 ** 20,
    heapMb: m.heapUsed / 2 ** 20,
    wasmMb: wasm === null ? null : wasm / 2 ** 20,
    externalMb: m.external / 2 ** 20,
  };
}

/** The process's peak RSS since the last reset (Linux VmHWM), MB; `reset` starts a new peak. */
function peakRssMb(reset = false): number | null {
  try {
    const kb = /VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (reset) writeFileSync('/proc/self/clear_refs', '5');
    return kb ? Number(kb) / 1024 : null;
  } catch {
    return null;
  }
}

const fmt = (r: Reading) =>
  `rss ${r.rssMb.toFixed(0)} MB  heap ${r.heapMb.toFixed(0)} MB  external ${r.externalMb.toFixed(0)} MB` +
  (r.wasmMb === null ? '' : `  pglite wasm ${r.wasmMb.toFixed(0)} MB`);
const growth = (from: number, to: number) => `${(((to - from) / from) * 100).toFixed(1)} %`;

async function main(): Promise<void> {
  if (!(globalThis as { gc?: () => void }).gc)
    console.warn('run with --expose-gc for readings after a full GC');
  // In its own process, so the simulator's memory is not counted.
  const sim = await startSimProcess({ timeScale: 0.2, rag: { initialIndexSize: 0 } });
  const dataDir = mkdtempSync(join(tmpdir(), 'fathom-memory-bench-'));
  const fathom = await startEmbedded({ dataDir, logLevels: ['error'] });
  database = fathom.database as typeof database;
  const campaign = (name: string, seconds: number) => ({
    name,
    target: { baseUrl: `${sim.url}/v1` },
    scenario: { type: 'chat', prompts: ['Explain prefix caching in two sentences.'], maxTokens: 32 },
    load: { concurrency: streams, durationMs: seconds * 1000 },
    reruns: { maxReruns: 0, cooldownMs: 0 },
  });
  const runOnce = async (name: string, seconds: number, during?: () => void) => {
    const { runId } = await fathom.campaigns.submit(campaign(name, seconds) as never, 'api');
    const timer = during ? setInterval(during, SAMPLE_EVERY_MS) : null;
    try {
      return await waitForRun(fathom.runs, runId, { timeoutMs: seconds * 1000 + 180_000 });
    } finally {
      if (timer) clearInterval(timer);
    }
  };
  try {
    console.log(`embedded Fathom, ${streams} streams, Node ${process.version}; start: ${fmt(read())}`);
    const started = Date.now();
    peakRssMb(true);
    const samples: { at: number; reading: Reading }[] = [];
    let runPeak: number | null = null;
    const long = await runOnce(`memory: one ${longSeconds} s run`, longSeconds, () => {
      runPeak = Math.max(runPeak ?? 0, peakRssMb(true) ?? 0);
      const reading = read();
      samples.push({ at: (Date.now() - started) / 1000, reading });
      console.log(`  long run t=${samples[samples.length - 1].at.toFixed(0)} s  ${fmt(reading)}`);
    });
    // The last sampling period and the report's read-back of the whole run.
    const endPeak = peakRssMb(true);
    const afterLong = read();
    console.log(
      `long run ${long.status}, ${long.summary?.requests ?? 0} requests; after it: ${fmt(afterLong)}; ` +
        `peak RSS while it ran ${runPeak === null ? '-' : (runPeak as number).toFixed(0)} MB, ` +
        `over its last ${SAMPLE_EVERY_MS / 1000} s and its report ${endPeak === null ? '-' : endPeak.toFixed(0)} MB`,
    );
    const firstMinute = samples.find((s) => s.at >= 60) ?? samples[0];
    const last = samples[samples.length - 1];
    if (firstMinute && last)
      console.log(
        `long run RSS from t=${firstMinute.at.toFixed(0)} s to t=${last.at.toFixed(0)} s: ${firstMinute.reading.rssMb.toFixed(0)} -> ${last.reading.rssMb.toFixed(0)} MB (${growth(firstMinute.reading.rssMb, last.reading.rssMb)}), heap ${firstMinute.reading.heapMb.toFixed(0)} -> ${last.reading.heapMb.toFixed(0)} MB (${growth(firstMinute.reading.heapMb, last.reading.heapMb)})`,
      );

    const after: Reading[] = [];
    for (let i = 1; i <= shortRuns; i++) {
      const run = await runOnce(`memory: short run ${i}`, shortSeconds);
      after.push(read());
      console.log(
        `  short run ${i}: ${run.status}, ${run.summary?.requests ?? 0} requests; ${fmt(after[after.length - 1])}`,
      );
    }
    if (after.length > 1)
      console.log(
        `${shortRuns} short runs: RSS after the first ${after[0].rssMb.toFixed(0)} MB, after the last ${after[after.length - 1].rssMb.toFixed(0)} MB (${growth(after[0].rssMb, after[after.length - 1].rssMb)}); heap ${after[0].heapMb.toFixed(0)} -> ${after[after.length - 1].heapMb.toFixed(0)} MB (${growth(after[0].heapMb, after[after.length - 1].heapMb)})`,
      );
  } finally {
    await fathom.close();
    await sim.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
