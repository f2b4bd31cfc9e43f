/**
 * What the shadow gateway adds to production's path: latency of the same requests sent straight
 * to a primary and through `startShadowGateway` in front of it (copies mirrored to a receiver
 * that answers 202), alternating rounds, each process on its own core where `taskset` exists.
 * Run: node -r ./bench/ts-register.js bench/shadow-gateway.bench.ts [rounds] [requests] [concurrency]
 * (BENCH_PORT_BASE=N: ports N..N+2 instead of random ones in 19000-19501).
 * Prints P50/P99 per side and the difference, then the gateway's copy counts; never fails on timing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { Pool } from 'undici';

const role = process.argv[2];

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
    });
    // Latency alone does not say whether the copies were made: the counts, when the bench ends it.
    const loop = performance.eventLoopUtilization();
    process.once('SIGTERM', () => {
      const s = gateway.stats();
      // The forwarding loop's own busy time (not the copy thread's), per forwarded request.
      const busyUs = (performance.eventLoopUtilization(loop).active * 1000) / Math.max(1, s.forwarded);
      process.stdout.write(
        `gateway: forwarded ${s.forwarded}, copied ${s.copied}, dropped ${s.copiesDropped}, failed ${s.copiesFailed}; forwarding loop busy ${busyUs.toFixed(1)} us per request\n`,
      );
      process.exit(0);
    });
  }
  process.send?.('ready');
}

function start(args: string[], core: number): Promise<ChildProcess> {
  const taskset = process.platform === 'linux' ? ['taskset', '-c', String(core)] : [];
  const argv = [process.execPath, '-r', `${__dirname}/ts-register.js`, __filename, ...args];
  const [cmd, ...rest] = taskset.length ? [...taskset, ...argv] : argv;
  const proc = spawn(cmd, rest, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    proc.once('message', () => resolve(proc));
    proc.once('exit', (code) => reject(new Error(`${args[0]} exited ${code}`)));
  });
}

async function measure(url: string, requests: number, concurrency: number): Promise<number[]> {
  const pool = new Pool(url, { connections: concurrency });
  const body = JSON.stringify({
    model: 'm',
    messages: [{ role: 'user', content: 'Say hello to ada@example.com' }],
  });
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next++ < requests) {
      const t0 = performance.now();
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
  return latencies.sort((a, b) => a - b);
}

const q = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 5);
  const requests = Number(process.argv[3] ?? 2000);
  const concurrency = Number(process.argv[4] ?? 8);
  // BENCH_PORT_BASE pins the three ports (base..base+2), e.g. to a range this host reserved.
  const base = Number(process.env.BENCH_PORT_BASE ?? 19000 + Math.floor(Math.random() * 500));
  const [primaryPort, receiverPort, gatewayPort] = [base, base + 1, base + 2];
  const children = [
    await start(['primary', String(primaryPort)], 0),
    await start(['receiver', String(receiverPort)], 0),
    await start(['gateway', String(gatewayPort), String(primaryPort), String(receiverPort)], 1),
  ];
  try {
    await measure(`http://127.0.0.1:${primaryPort}`, 500, concurrency); // warm-up
    await measure(`http://127.0.0.1:${gatewayPort}`, 500, concurrency);
    const rows: string[] = [];
    for (let r = 0; r < rounds; r++) {
      const direct = await measure(`http://127.0.0.1:${primaryPort}`, requests, concurrency);
      const via = await measure(`http://127.0.0.1:${gatewayPort}`, requests, concurrency);
      rows.push(
        `round ${r + 1}: direct P50 ${q(direct, 0.5).toFixed(3)} P99 ${q(direct, 0.99).toFixed(3)} ms | gateway P50 ${q(via, 0.5).toFixed(3)} P99 ${q(via, 0.99).toFixed(3)} ms | added P50 ${(q(via, 0.5) - q(direct, 0.5)).toFixed(3)} P99 ${(q(via, 0.99) - q(direct, 0.99)).toFixed(3)} ms`,
      );
      process.stdout.write(`${rows.at(-1)}\n`);
    }
  } finally {
    // Waits for them, so the gateway's counts are printed before this ends.
    await Promise.all(children.map((c) => new Promise((exited) => (c.once('exit', exited), c.kill()))));
  }
}

if (role === 'primary' || role === 'receiver' || role === 'gateway') void child();
else void main();
