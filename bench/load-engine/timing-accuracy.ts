// Fathom's TTFT / inter-token timing error against the simulated target's per-token write times
// (see libs/load/src/__fixtures__/timing-accuracy.ts for the definitions), beside a bare reader
// that only stamps socket reads (the machine's floor), alternating. Figures only.
//   node -r ./bench/ts-register.js bench/load-engine/timing-accuracy.ts [CONCURRENCY=200] [SECONDS=1.5] [ROUNDS=3] [CLIENTS=bare,fathom,fathom-worker[:THREADS]]
// fathom: the engine on the bench's main thread; fathom-worker: on a worker thread of its own, as
// the load-generator runs it by default.
import { cpus, loadavg } from 'node:os';
import { measureTimingAccuracy } from '../../libs/load/src/__fixtures__/timing-accuracy';

async function main(): Promise<void> {
  const concurrency = Number(process.argv[2] ?? 200);
  const durationMs = Number(process.argv[3] ?? 1.5) * 1000;
  const rounds = Number(process.argv[4] ?? 3);
  // `fathom-worker:N`: N engine threads, each with a shard of the streams (load.shards).
  const clients = (process.argv[5] ?? 'bare,fathom,fathom-worker').split(',').map((name) => {
    const [client, threads] = name.split(':') as ['bare' | 'fathom' | 'fathom-worker', string | undefined];
    return { name, client, threads: Number(threads ?? 1) };
  });
  console.log(
    `${cpus().length} x ${cpus()[0]?.model}, Node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const q = (x: { p50: number; p90: number; p99: number; max: number }) =>
    `p50 ${x.p50.toFixed(3)} p90 ${x.p90.toFixed(3)} p99 ${x.p99.toFixed(3)} max ${x.max.toFixed(2)}`;
  // Each round: the bare reader (the machine's floor: it only stamps socket reads) and Fathom
  // (inline, then on its worker thread), in turn, against a fresh simulator each.
  for (let round = 1; round <= rounds; round++) {
    for (const { name, client, threads } of clients) {
      const f = await measureTimingAccuracy({
        concurrency,
        durationMs,
        maxTokens: 24,
        warmupMs: 300,
        client,
        threads,
      });
      console.log(
        `round ${round} ${name}: ${f.streams} streams, ${f.gaps} gaps, errors ${f.counts.errors}, mismatched ${f.mismatched}\n` +
          `  TTFT error ms  ${q(f.ttftErrorMs)}\n  ITL error ms   ${q(f.itlErrorMs)}\n` +
          `  send->target arrival ms ${q(f.sendToTargetArrivalMs)}\n` +
          `  client loop delay ms p99 ${f.clientLoopDelayMs.p99.toFixed(2)} max ${f.clientLoopDelayMs.max.toFixed(2)}\n` +
          `  client CPU ${f.clientCpuMs.toFixed(0)} ms in ${(durationMs / 1000).toFixed(1)} s = ${((f.clientCpuMs * 1000) / (f.gaps + f.streams)).toFixed(1)} us per token event; ` +
          `waited ${f.clientRunQueueWaitMs.toFixed(0)} ms runnable but off-CPU`,
      );
    }
  }
}

void main();
