import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { request } from 'undici';
import { CampaignSpecSchema } from '@fathom/contracts';
import { monotonicMinusPerfNowMs } from '@fathom/sim';
import type { DriverOutcome } from '../driver/request-outcome';
import { runBareStreams } from './bare-stream.reader';
import { startSimProcess } from './sim-process';
import type { TimingWorkerData, TimingWorkerResult } from './timing-accuracy.worker';
import { runTimingShard } from './timing-run.util';

/**
 * Fathom's TTFT and inter-token timings against the simulated target's ground truth (its write
 * time of every token, GET /sim/requests/:id), for the timing test and bench/load-engine.
 *
 * What Fathom adds to a timing is the delay between a token reaching the wire (the target's write)
 * and Fathom's stamp of it. So per token: receipt - emit, both on CLOCK_MONOTONIC (the target
 * converts its epoch stamps with GET /sim/clock, we convert performance.now()). TTFT error =
 * |our TTFT - (first emit - our send)| = |our first receipt - first emit|; ITL error = |our gap -
 * the target's gap|. The target's accept/parse time before it stamps arrival is server latency
 * the user really waits for: it is reported (`sendToTargetArrivalMs`), not counted.
 */
export interface TimingAccuracy {
  streams: number;
  gaps: number;
  counts: { sent: number; errors: number };
  /** Streams whose chunk count differs from the target's token count (should be 0). */
  mismatched: number;
  /** Ground truth whose `x-fathom-request` is not ours (should be 0). */
  misjoined: number;
  ttftErrorMs: Quantiles;
  itlErrorMs: Quantiles;
  sendToTargetArrivalMs: Quantiles & { p01: number };
  /** Event-loop delay of the thread that ran the client (the engine's worker for `fathom-worker`). */
  clientLoopDelayMs: { p99: number; max: number };
  /** CPU time of this process (user + system) during the measured run (without the worker's set-up and warm-up). */
  clientCpuMs: number;
  /**
   * Time the client's thread (main, or the engine's worker) was runnable but not running (Linux schedstat; NaN
   * elsewhere): what other processes on the machine took from the client during the run.
   */
  clientRunQueueWaitMs: number;
}
export interface Quantiles {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

interface GroundTruth {
  arrivalEpochMs: number;
  tokenEmitEpochMs: number[];
  fathomRequestId: string | null;
}

export interface TimingAccuracyOptions {
  concurrency: number;
  durationMs: number;
  maxTokens: number;
  /** A first run whose results are dropped (JIT, connection set-up). */
  warmupMs?: number;
  /**
   * `fathom` (default): runShard with its full accounting, on this thread. `fathom-worker`: the
   * same on a worker thread of its own, as the load-generator runs it by default
   * (timing-accuracy.worker.ts). `bare`: the machine's floor, a reader that only stamps socket
   * reads (bare-stream.reader.ts), measured the same way.
   */
  client?: 'fathom' | 'fathom-worker' | 'bare';
  /**
   * `fathom-worker` only: engine threads, each running one shard of the streams (a campaign's
   * `load.shards`), pinned to cores 0..threads-1 when the machine has a core to spare for the
   * target; 1 by default. Fewer sockets per thread: fewer reads queued behind one another.
   */
  threads?: number;
}

/** One stream, whoever read it: what the comparison with the ground truth needs. */
interface ReadStream {
  serverRequestId: string | undefined;
  sentMonotonicMs: number;
  chunkOffsetsMs: number[];
}

export async function measureTimingAccuracy(options: TimingAccuracyOptions): Promise<TimingAccuracy> {
  // As bench/load-engine pins target and client to different cores: where taskset and two cores
  // exist, the target runs on the last core and this process's main thread on core 0, so the two
  // event loops never queue for one core (measured here: median ITL error 0.6 ms unpinned, 0.03
  // ms pinned). The main thread's affinity is restored afterwards.
  const pin = pinning();
  const sim = await startSimProcess(
    {
      seed: 7,
      engine: {
        maxNumSeqs: Math.max(256, options.concurrency),
        maxNumBatchedTokens: 16384,
        numBlocks: 16384,
      },
      output: { hallucinationRate: 0 },
    },
    pin ? { cpu: pin.targetCpu } : {},
  );
  pin?.pinClient();
  try {
    const clock = (await (await request(`${sim.url}/sim/clock`)).body.json()) as {
      epochMinusMonotonicMs: number;
    };
    const perfToMonotonic = monotonicMinusPerfNowMs();
    const spec = CampaignSpecSchema.parse({
      name: 'sim-timing',
      target: { baseUrl: `${sim.url}/v1` },
      scenario: {
        type: 'chat',
        model: 'fathom-sim-8b',
        prompts: ['Explain prefix caching.', 'Name three rivers.'],
        maxTokens: options.maxTokens,
      },
      load: { concurrency: options.concurrency, durationMs: options.durationMs, requestTimeoutMs: 20000 },
    });
    const received = new Map<string, ReadStream>();
    const run = (durationMs: number, tap?: (id: string, o: DriverOutcome, sentMono: number) => void) =>
      runTimingShard(spec, durationMs, tap);
    const bare = (durationMs: number) =>
      runBareStreams({
        url: `${sim.url}/v1`,
        concurrency: options.concurrency,
        durationMs,
        body: JSON.stringify({
          model: 'fathom-sim-8b',
          messages: [{ role: 'user', content: 'Explain prefix caching.' }],
          max_tokens: options.maxTokens,
          stream: true,
        }),
      });
    const client = options.client ?? 'fathom';
    if (options.warmupMs && client !== 'fathom-worker')
      await (client === 'bare' ? bare(options.warmupMs) : run(options.warmupMs));
    // Not for the worker client: this thread's 1 ms sampling timer would wake on the engine's core.
    const loop = monitorEventLoopDelay({ resolution: 1 });
    if (client !== 'fathom-worker') loop.enable();
    const cpuBefore = process.cpuUsage();
    const schedBefore = runQueueWaitMs();
    let counts: { sent: number; errors: number };
    let engineThread: Pick<TimingWorkerResult, 'loopDelayMs' | 'runQueueWaitMs' | 'cpuMs'> | null = null;
    if (client === 'fathom-worker') {
      // The worker is made after pinClient(), so its thread shares the client's core.
      const threads = Math.max(1, options.threads ?? 1);
      const spare = availableParallelism() - 1;
      const results = await Promise.all(
        Array.from({ length: threads }, (_, index) =>
          runOnWorker({
            spec,
            warmupMs: options.warmupMs ?? 0,
            durationMs: options.durationMs,
            shard: { index, count: threads },
            ...(pin && threads > 1 && spare >= threads ? { cpu: index } : {}),
          }),
        ),
      );
      for (const result of results) for (const [id, stream] of result.streams) received.set(id, stream);
      counts = {
        sent: results.reduce((n, r) => n + r.counts.sent, 0),
        errors: results.reduce((n, r) => n + r.counts.errors, 0),
      };
      engineThread = {
        loopDelayMs: {
          p99: Math.max(...results.map((r) => r.loopDelayMs.p99)),
          max: Math.max(...results.map((r) => r.loopDelayMs.max)),
        },
        runQueueWaitMs: results.reduce((n, r) => n + r.runQueueWaitMs, 0),
        // Each thread read the process's CPU over about the same interval.
        cpuMs: Math.max(...results.map((r) => r.cpuMs)),
      };
    } else if (client === 'bare') {
      const streams = await bare(options.durationMs);
      for (const [id, stream] of streams)
        received.set(id, {
          serverRequestId: stream.serverRequestId,
          sentMonotonicMs: stream.sentMono + perfToMonotonic,
          chunkOffsetsMs: stream.chunkOffsetsMs,
        });
      counts = { sent: streams.size, errors: 0 };
    } else {
      counts = await run(options.durationMs, (id, outcome, sentMono) =>
        received.set(id, {
          serverRequestId: outcome.serverRequestId,
          sentMonotonicMs: sentMono + perfToMonotonic,
          chunkOffsetsMs: outcome.chunkOffsetsMs,
        }),
      );
    }
    loop.disable();
    const cpu = process.cpuUsage(cpuBefore);
    const runQueueMs = engineThread ? engineThread.runQueueWaitMs : runQueueWaitMs() - schedBefore;

    const ttftErrors: number[] = [];
    const gapErrors: number[] = [];
    const sendToArrival: number[] = [];
    let mismatched = 0;
    let misjoined = 0;
    const entries = [...received.entries()];
    for (let i = 0; i < entries.length; i += 25) {
      await Promise.all(
        entries.slice(i, i + 25).map(async ([requestId, stream]) => {
          const { sentMonotonicMs } = stream;
          const response = await request(`${sim.url}/sim/requests/${stream.serverRequestId}`);
          const truth = (await response.body.json()) as GroundTruth;
          if (truth.fathomRequestId !== requestId) {
            misjoined++;
            return;
          }
          const ours = stream.chunkOffsetsMs;
          if (ours.length !== truth.tokenEmitEpochMs.length || ours.length === 0) {
            mismatched++;
            return;
          }
          const emit = truth.tokenEmitEpochMs.map((t) => t - clock.epochMinusMonotonicMs);
          ttftErrors.push(Math.abs(sentMonotonicMs + ours[0] - emit[0]));
          sendToArrival.push(truth.arrivalEpochMs - clock.epochMinusMonotonicMs - sentMonotonicMs);
          for (let k = 1; k < ours.length; k++)
            gapErrors.push(Math.abs(ours[k] - ours[k - 1] - (emit[k] - emit[k - 1])));
        }),
      );
    }
    return {
      streams: received.size,
      gaps: gapErrors.length,
      counts,
      mismatched,
      misjoined,
      ttftErrorMs: quantiles(ttftErrors),
      itlErrorMs: quantiles(gapErrors),
      sendToTargetArrivalMs: {
        ...quantiles(sendToArrival),
        p01: quantile(
          sendToArrival.sort((a, b) => a - b),
          0.01,
        ),
      },
      clientLoopDelayMs: engineThread
        ? engineThread.loopDelayMs
        : { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      clientCpuMs: engineThread ? engineThread.cpuMs : (cpu.user + cpu.system) / 1000,
      clientRunQueueWaitMs: runQueueMs,
    };
  } finally {
    pin?.restore();
    await sim.close();
  }
}

/** Runs timing-accuracy.worker.ts (TypeScript, compiled on load by the workspace's one bootstrap) and awaits its result. */
function runOnWorker(data: TimingWorkerData): Promise<TimingWorkerResult> {
  const register = join(__dirname, '..', '..', '..', 'testing', 'src', 'ts-register.js');
  const entry = join(__dirname, 'timing-accuracy.worker.ts');
  const worker = new Worker(`require(${JSON.stringify(register)}); require(${JSON.stringify(entry)});`, {
    eval: true,
    workerData: data,
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (result: TimingWorkerResult) => {
      resolve(result);
      void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`timing worker exited (code ${code}) before its result`)));
  });
}

/** Pinning of target and client, or null where taskset or a second core is missing. */
function pinning(): { targetCpu: number; pinClient(): void; restore(): void } | null {
  const cores = availableParallelism();
  if (cores < 2) return null;
  let before: string;
  try {
    before =
      /: (\S+)\s*$/.exec(
        execFileSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8' }),
      )?.[1] ?? '';
  } catch {
    return null;
  }
  if (before === '') return null;
  const set = (cpus: string) =>
    execFileSync('taskset', ['-c', '-p', cpus, String(process.pid)], { stdio: 'ignore' });
  return { targetCpu: cores - 1, pinClient: () => set('0'), restore: () => set(before) };
}

/** Runnable-but-waiting time of the main thread so far (/proc/thread-self/schedstat, ns -> ms). */
function runQueueWaitMs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return NaN;
  }
}

/** p50/p90/p99/max of `values` (nearest rank). */
export function quantiles(values: number[]): Quantiles {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    p50: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

/** Nearest-rank quantile `q` of ascending `sorted`; NaN when empty. */
export function quantile(sorted: number[], q: number): number {
  return sorted[Math.max(0, Math.min(sorted.length - 1, Math.ceil(sorted.length * q) - 1))] ?? NaN;
}
