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
import { getHeapSpaceStatistics } from 'node:v8';
import { startEmbedded, waitForRun } from '@fathom/runtime';
import { startSimProcess } from './detection/sim-process';

const longSeconds = Number(process.argv[2] ?? 180);
const shortRuns = Number(process.argv[3] ?? 20);
const shortSeconds = Number(process.argv[4] ?? 5);
const streams = Number(process.argv[5] ?? 48);
const SAMPLE_EVERY_MS = 15_000;
/**
 * Seconds into the bench by which the analyzer's live timeline is full: the longest judged span
 * (the slow tier pair's 5 min) plus its 60 s margin, and the start-up before the run's first
 * window. Past it the live state is pruned as fast as it grows.
 */
const LIVE_HORIZON_S = 420;

interface Reading {
  readonly rssMb: number;
  readonly heapMb: number;
  /** The main isolate's heap as committed (used, free and fragmented), MB. */
  readonly heapTotalMb: number;
  /** The main isolate's heap spaces, committed MB each. */
  readonly spaces: Readonly<Record<string, number>>;
  /** PGlite's WASM heap (it never shrinks), MB; null for PostgreSQL. */
  readonly wasmMb: number | null;
  /** Memory outside the V8 heap that V8 knows of (Buffers, ArrayBuffers), MB. */
  readonly externalMb: number;
  /** RSS of anonymous memory (heaps, malloc) and of mapped files (code, libraries), MB. */
  readonly rssAnonMb: number | null;
  readonly rssFileMb: number | null;
  /**
   * Each worker thread's own V8 heap and external memory (process.memoryUsage() here counts only
   * the main isolate): the load engine's thread per shard, the embedding model's thread.
   */
  readonly threads: readonly ThreadHeap[];
}

interface ThreadHeap {
  readonly id: number;
  readonly heapMb: number;
  readonly heapTotalMb: number;
  readonly externalMb: number;
  /** Committed MB per heap space. */
  readonly spaces: Readonly<Record<string, number>>;
}

let database: { wasmHeapBytes?: () => number } | null = null;

interface ThreadReport {
  header: { threadId: number };
  javascriptHeap: {
    usedMemory: number;
    totalMemory: number;
    externalMemory: number;
    heapSpaces: Record<string, { committedMemory: number }>;
  };
}

/** The worker threads' heaps, from a diagnostic report (each worker answers for its own isolate). */
function threadHeaps(): Reading['threads'] {
  const report = process.report?.getReport() as unknown as { workers?: ThreadReport[] } | undefined;
  return (report?.workers ?? []).map((w) => ({
    id: w.header.threadId,
    heapMb: w.javascriptHeap.usedMemory / 2 ** 20,
    heapTotalMb: w.javascriptHeap.totalMemory / 2 ** 20,
    externalMb: w.javascriptHeap.externalMemory / 2 ** 20,
    spaces: Object.fromEntries(
      Object.entries(w.javascriptHeap.heapSpaces).map(([name, space]) => [
        name,
        space.committedMemory / 2 ** 20,
      ]),
    ),
  }));
}

function statusMb(field: string): number | null {
  try {
    const kb = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : null;
  } catch {
    return null;
  }
}

function read(): Reading {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  const wasm = database?.wasmHeapBytes?.() ?? null;
  return {
    rssMb: m.rss / 2 ** 20,
    heapMb: m.heapUsed / 2 ** 20,
    heapTotalMb: m.heapTotal / 2 ** 20,
    spaces: Object.fromEntries(
      getHeapSpaceStatistics().map((space) => [space.space_name, space.physical_space_size / 2 ** 20]),
    ),
    wasmMb: wasm === null ? null : wasm / 2 ** 20,
    externalMb: m.external / 2 ** 20,
    rssAnonMb: statusMb('RssAnon'),
    rssFileMb: statusMb('RssFile'),
    threads: threadHeaps(),
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
  `rss ${r.rssMb.toFixed(0)} MB (anon ${r.rssAnonMb?.toFixed(0) ?? '-'}, file ${r.rssFileMb?.toFixed(0) ?? '-'})` +
  `  heap ${r.heapMb.toFixed(0)}/${r.heapTotalMb.toFixed(0)} MB  external ${r.externalMb.toFixed(0)} MB` +
  (r.wasmMb === null ? '' : `  pglite wasm ${r.wasmMb.toFixed(0)} MB`) +
  r.threads
    .map(
      (t) =>
        `  thread ${t.id}: heap ${t.heapMb.toFixed(0)}/${t.heapTotalMb.toFixed(0)} ext ${t.externalMb.toFixed(0)}`,
    )
    .join('');
/** Least-squares slope of `mb` over `at` (seconds), in MB a minute. */
function slopeMbPerMin(points: readonly { at: number; mb: number }[]): number {
  const n = points.length;
  const meanAt = points.reduce((s, p) => s + p.at, 0) / n;
  const meanMb = points.reduce((s, p) => s + p.mb, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.at - meanAt) * (p.mb - meanMb);
    den += (p.at - meanAt) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 60;
}
/** Each heap space's committed MB then -> now, the ones that changed by 1 MB or more. */
function spaceGrowth(then: Readonly<Record<string, number>>, now: Readonly<Record<string, number>>): string {
  const moved = Object.keys(now)
    .filter((name) => Math.abs(now[name] - (then[name] ?? 0)) >= 1)
    .map((name) => `${name} ${(then[name] ?? 0).toFixed(0)} -> ${now[name].toFixed(0)}`);
  return moved.length ? moved.join(', ') : 'none moved 1 MB';
}
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
    // While the load ran: the samples after its planned end fall in its report's read-back.
    const pastHorizon = samples.filter((s) => s.at >= LIVE_HORIZON_S && s.at <= longSeconds);
    const horizon = pastHorizon[0];
    const lastLoaded = pastHorizon[pastHorizon.length - 1];
    if (pastHorizon.length >= 3) {
      const threadsMb = (r: Reading) => r.threads.reduce((sum, t) => sum + t.heapMb + t.externalMb, 0);
      const threadsCommittedMb = (r: Reading) => r.threads.reduce((sum, t) => sum + t.heapTotalMb, 0);
      const slope = (of: (r: Reading) => number | null) =>
        slopeMbPerMin(pastHorizon.map((s) => ({ at: s.at, mb: of(s.reading) ?? 0 }))).toFixed(2);
      console.log(
        `long run after the live horizon, t=${horizon.at.toFixed(0)} s to t=${lastLoaded.at.toFixed(0)} s: RSS ${horizon.reading.rssMb.toFixed(0)} -> ${lastLoaded.reading.rssMb.toFixed(0)} MB (${growth(horizon.reading.rssMb, lastLoaded.reading.rssMb)}); ` +
          `slope MB/min (least squares): rss ${slope((r) => r.rssMb)}, anon ${slope((r) => r.rssAnonMb)}, heap ${slope((r) => r.heapMb)}, ` +
          `heap committed ${slope((r) => r.heapTotalMb)}, external ${slope((r) => r.externalMb)}, ` +
          `worker threads (heap + external) ${slope(threadsMb)}, their heaps committed ${slope(threadsCommittedMb)}`,
      );
      console.log(`  committed heap spaces past the horizon, MB (used/committed heap per isolate above):`);
      console.log(`    main: ${spaceGrowth(horizon.reading.spaces, lastLoaded.reading.spaces)}`);
      for (const t of lastLoaded.reading.threads) {
        const then = horizon.reading.threads.find((h) => h.id === t.id);
        if (then) console.log(`    thread ${t.id}: ${spaceGrowth(then.spaces, t.spaces)}`);
      }
    }

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
