/**
 * What the shadow gateway adds to production's path: latency of the same requests sent straight
 * to a primary and through `startShadowGateway` in front of it (copies mirrored to a receiver
 * that answers 202), alternating rounds, each process on its own core where `taskset` exists.
 * Run: node -r ./bench/ts-register.js bench/shadow-gateway.bench.ts [rounds] [requests] [concurrency] [sampleRate] [rate]
 * (BENCH_PORT_BASE=N: ports N..N+2 instead of random ones in 19000-19501; BENCH_GATEWAY_CPU_PROF=dir:
 * the gateway runs under `node --cpu-prof`, one profile per thread in dir; BENCH_GATEWAY_NODE_FLAGS='--trace-gc ...':
 * more flags for the gateway's node, which runs with `--no-memory-reducer` as `fathom shadow gateway` does;
 * BENCH_GATEWAY_WARMUP=N[@RATE], BENCH_GATEWAY_IDLE_MS: the warm-up, see `main`).
 * Without `rate` the client is closed-loop (each of `concurrency` users sends its next request
 * when the last one ends: the gateway at saturation). With `rate` (requests per second) it is
 * open-loop: requests are sent on a fixed schedule, at most `concurrency` in flight. A latency
 * runs from the actual send (timers fire up to a millisecond late, the same on both sides); the
 * sends more than 2 ms behind schedule are counted and printed, so a side that held all
 * `concurrency` slots and fell behind shows. A production gateway runs below saturation; this is
 * that case.
 * Prints P50/P99 per side and the difference, and per round the copies made and dropped and the
 * CPU time of the gateway's threads; never fails on timing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Pool } from 'undici';

const role = process.argv[2];

/** What the gateway child answers to a 'stats' message: its counts and its threads' CPU time. */
interface GatewayReport {
  forwarded: number;
  copied: number;
  copiesDropped: number;
  copiesFailed: number;
  /** On-CPU time (Linux schedstat) of each thread, ns, by thread id; the main one forwards. */
  cpuNsByThread: Record<string, number>;
}

/** On-CPU ns of each of this process's threads ({} without /proc). */
function threadCpuNs(): Record<string, number> {
  const cpu: Record<string, number> = {};
  try {
    for (const tid of readdirSync('/proc/self/task'))
      cpu[tid] = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    // not Linux: the CPU columns read 0
  }
  return cpu;
}

/** A primary answering one fixed non-streamed chat completion; a receiver answering 202. */
function serveFixed(port: number, status: number, body: string): void {
  createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
    });
  }).listen(port, '127.0.0.1');
}

async function child(): Promise<void> {
  const port = Number(process.argv[3]);
  if (role === 'primary')
    serveFixed(
      port,
      200,
      '{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, this is a short answer."},"finish_reason":"stop"}]}',
    );
  if (role === 'receiver') serveFixed(port, 202, '{"accepted":true}');
  if (role === 'gateway') {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { startShadowGateway } = require('@fathom/orchestrator') as typeof import('@fathom/orchestrator');
    const gateway = await startShadowGateway({
      host: '127.0.0.1',
      port,
      primary: `http://127.0.0.1:${process.argv[4]}`,
      mirror: { url: `http://127.0.0.1:${process.argv[5]}/mirror` },
      sampleRate: Number(process.argv[6]),
    });
    // Latency alone does not say whether the copies were made: the counts, and the CPU time the
    // threads took (the event loop's busy time would count time spent preempted as busy).
    process.on('message', () => {
      const { forwarded, copied, copiesDropped, copiesFailed } = gateway.stats();
      const report: GatewayReport = {
        forwarded,
        copied,
        copiesDropped,
        copiesFailed,
        cpuNsByThread: threadCpuNs(),
      };
      process.send?.(report);
    });
    process.once('SIGTERM', () => process.exit(0));
  }
  process.send?.('ready');
}

function start(args: string[], core: number): Promise<ChildProcess> {
  // BENCH_GATEWAY_CORES=0,1: the gateway's cores (default: core 1 alone).
  const cores = args[0] === 'gateway' ? (process.env.BENCH_GATEWAY_CORES ?? String(core)) : String(core);
  const taskset = process.platform === 'linux' ? ['taskset', '-c', cores] : [];
  // BENCH_GATEWAY_POLICY=other: the gateway under the kernel's normal policy, as production runs
  // it, where its copy thread's nice value applies; a bench run under `chrt -r` would otherwise
  // hand the real-time policy down to it, and nice means nothing there.
  if (args[0] === 'gateway' && process.env.BENCH_GATEWAY_POLICY === 'other' && taskset.length)
    taskset.unshift('chrt', '-o', '0');
  const profile = process.env.BENCH_GATEWAY_CPU_PROF;
  const flags =
    args[0] !== 'gateway'
      ? []
      : [
          ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []),
          // As `fathom shadow gateway` runs it (bin/fathom.js).
          '--no-memory-reducer',
          ...(process.env.BENCH_GATEWAY_NODE_FLAGS ?? '').split(' ').filter(Boolean),
        ];
  const argv = [process.execPath, ...flags, '-r', `${__dirname}/ts-register.js`, __filename, ...args];
  const [cmd, ...rest] = taskset.length ? [...taskset, ...argv] : argv;
  const proc = spawn(cmd, rest, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    proc.once('message', () => resolve(proc));
    proc.once('exit', (code) => reject(new Error(`${args[0]} exited ${code}`)));
  });
}

/** Latencies, sorted; `late`: open-loop sends more than 2 ms behind their schedule. */
async function measure(
  url: string,
  requests: number,
  concurrency: number,
  rate?: number,
): Promise<number[] & { late?: number }> {
  const pool = new Pool(url, { connections: concurrency });
  const body = JSON.stringify({
    model: 'm',
    messages: [{ role: 'user', content: 'Say hello to ada@example.com' }],
  });
  const latencies: number[] & { late?: number } = [];
  let late = 0;
  let next = 0;
  const begin = performance.now();
  const worker = async () => {
    while (next < requests) {
      const k = next++;
      let t0 = performance.now();
      if (rate !== undefined) {
        // Open loop: request k is due at begin + k / rate.
        const due = begin + (k * 1000) / rate;
        if (due > t0) await new Promise((woken) => setTimeout(woken, due - t0));
        t0 = performance.now();
        if (t0 - due > 2) late++;
      }
      const res = await pool.request({
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json' },
        body,
      });
      await res.body.text();
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  await pool.close();
  latencies.sort((a, b) => a - b);
  if (rate !== undefined) latencies.late = late;
  return latencies;
}

function gatewayReport(gateway: ChildProcess): Promise<GatewayReport> {
  return new Promise((resolve) => {
    gateway.once('message', (report: GatewayReport) => resolve(report));
    gateway.send('stats');
  });
}

const q = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 5);
  const requests = Number(process.argv[3] ?? 2000);
  const concurrency = Number(process.argv[4] ?? 8);
  const sampleRate = process.argv[5] ?? '1';
  const rate = process.argv[6] === undefined ? undefined : Number(process.argv[6]);
  // BENCH_PORT_BASE pins the three ports (base..base+2), e.g. to a range this host reserved.
  const base = Number(process.env.BENCH_PORT_BASE ?? 19000 + Math.floor(Math.random() * 500));
  const [primaryPort, receiverPort, gatewayPort] = [base, base + 1, base + 2];
  const children = [
    await start(['primary', String(primaryPort)], 0),
    await start(['receiver', String(receiverPort)], 0),
    await start(['gateway', String(gatewayPort), String(primaryPort), String(receiverPort), sampleRate], 1),
  ];
  const gateway = children[2];
  try {
    // Warm-up: with 500 requests a side the first two rounds still ran V8's compiler threads
    // (the gateway's other threads took 40-170 us of CPU per request there, 5-10 later).
    // BENCH_GATEWAY_WARMUP=N[@RATE]: the gateway's warm-up, N requests (default 4000), open-loop at
    // RATE req/s if given; BENCH_GATEWAY_IDLE_MS: a pause after it, before round 1.
    const [warmRequests, warmRate] = (process.env.BENCH_GATEWAY_WARMUP ?? '4000').split('@').map(Number);
    await measure(`http://127.0.0.1:${primaryPort}`, 4000, concurrency);
    await measure(`http://127.0.0.1:${gatewayPort}`, warmRequests, concurrency, warmRate);
    await new Promise((idle) => setTimeout(idle, Number(process.env.BENCH_GATEWAY_IDLE_MS ?? 0)));
    process.stdout.write(
      `sample rate ${sampleRate}, ${rate === undefined ? 'closed loop (saturation)' : `open loop at ${rate} req/s`}\n`,
    );
    for (let r = 0; r < rounds; r++) {
      const direct = await measure(`http://127.0.0.1:${primaryPort}`, requests, concurrency, rate);
      const before = await gatewayReport(gateway);
      const started = performance.now();
      const via = await measure(`http://127.0.0.1:${gatewayPort}`, requests, concurrency, rate);
      const seconds = (performance.now() - started) / 1000;
      // Copies still on their way settle in the next round's counts (or the last report's).
      const after = await gatewayReport(gateway);
      const forwarded = after.forwarded - before.forwarded;
      const copied = after.copied - before.copied;
      // The forwarding thread; the busiest other one (the copy thread when copies are made); the rest.
      const spent = Object.entries(after.cpuNsByThread).map(
        ([tid, ns]) => [tid, ns - (before.cpuNsByThread[tid] ?? 0)] as const,
      );
      const forwardingNs = spent.find(([tid]) => Number(tid) === gateway.pid)?.[1] ?? 0;
      const others = spent.filter(([tid]) => Number(tid) !== gateway.pid).map(([, ns]) => ns);
      const busiestNs = Math.max(0, ...others);
      const restNs = others.reduce((a, b) => a + b, 0) - busiestNs;
      const cpuUs = (ns: number) => (ns / 1000 / forwarded).toFixed(1);
      process.stdout.write(
        `round ${r + 1}: direct P50 ${q(direct, 0.5).toFixed(3)} P99 ${q(direct, 0.99).toFixed(3)} ms | gateway P50 ${q(via, 0.5).toFixed(3)} P99 ${q(via, 0.99).toFixed(3)} ms | added P50 ${(q(via, 0.5) - q(direct, 0.5)).toFixed(3)} P99 ${(q(via, 0.99) - q(direct, 0.99)).toFixed(3)} ms` +
          ` | copied ${copied} (${Math.round(copied / seconds)}/s), dropped ${after.copiesDropped - before.copiesDropped}, failed ${after.copiesFailed - before.copiesFailed}` +
          ` | CPU per request: forwarding thread ${cpuUs(forwardingNs)} us, busiest other ${cpuUs(busiestNs)} us, rest ${cpuUs(restNs)} us\n`,
      );
    }
    const last = await gatewayReport(gateway);
    process.stdout.write(
      `gateway in all (warm-up included): forwarded ${last.forwarded}, copied ${last.copied}, dropped ${last.copiesDropped}, failed ${last.copiesFailed}\n`,
    );
  } finally {
    await Promise.all(children.map((c) => new Promise((exited) => (c.once('exit', exited), c.kill()))));
  }
}

if (role === 'primary' || role === 'receiver' || role === 'gateway') void child();
else void main();
