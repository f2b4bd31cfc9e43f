// The `fathom-worker` client of timing-accuracy.ts: runShard on a worker thread, as the
// load-generator runs it by default (FATHOM_ENGINE_THREAD=worker), so that the measuring
// process's own heap and work stay off the engine's thread. Everything it measured is posted
// once, after the run, already on CLOCK_MONOTONIC (this thread's performance.now() has its own
// origin).
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import type { CampaignSpec } from '@fathom/contracts';
import { monotonicMinusPerfNowMs } from '@fathom/sim';
import { runTimingShard } from './timing-run.util';

export interface TimingWorkerData {
  spec: CampaignSpec;
  warmupMs: number;
  durationMs: number;
  /** This thread's shard of the streams (the campaign's concurrency is split across shards). */
  shard: { index: number; count: number };
  /** Core this thread pins itself to (taskset on its own thread id); none: the creator's affinity. */
  cpu?: number;
}

export interface TimingWorkerResult {
  counts: { sent: number; errors: number };
  streams: [
    string,
    { serverRequestId: string | undefined; sentMonotonicMs: number; chunkOffsetsMs: number[] },
  ][];
  loopDelayMs: { p99: number; max: number };
  runQueueWaitMs: number;
  /** Process CPU (user + system) during the measured run: this thread's, the idle main thread's, GC helpers'. */
  cpuMs: number;
}

async function main(): Promise<void> {
  const { spec, warmupMs, durationMs, shard, cpu: core } = workerData as TimingWorkerData;
  if (core !== undefined) pinThisThread(core);
  const perfToMonotonic = monotonicMinusPerfNowMs();
  const streams: TimingWorkerResult['streams'] = [];
  const run = (ms: number, keep: boolean) =>
    runTimingShard(
      spec,
      ms,
      keep
        ? (id, outcome, sentMono) =>
            void streams.push([
              id,
              {
                serverRequestId: outcome.serverRequestId,
                sentMonotonicMs: sentMono + perfToMonotonic,
                chunkOffsetsMs: outcome.chunkOffsetsMs,
              },
            ])
        : undefined,
      shard,
    );
  if (warmupMs > 0) await run(warmupMs, false);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const schedBefore = threadRunQueueWaitMs();
  const cpuBefore = process.cpuUsage();
  const counts = await run(durationMs, true);
  const cpu = process.cpuUsage(cpuBefore);
  loop.disable();
  const result: TimingWorkerResult = {
    counts: { sent: counts.sent, errors: counts.errors },
    streams,
    loopDelayMs: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
    runQueueWaitMs: threadRunQueueWaitMs() - schedBefore,
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
  parentPort!.postMessage(result);
}

/** Pins this thread (not the process) to `cpu`: its Linux thread id is the tail of /proc/thread-self. */
function pinThisThread(cpu: number): void {
  const tid = readlinkSync('/proc/thread-self').split('/').pop()!;
  execFileSync('taskset', ['-c', '-p', String(cpu), tid], { stdio: 'ignore' });
}

function threadRunQueueWaitMs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return NaN;
  }
}

void main();
