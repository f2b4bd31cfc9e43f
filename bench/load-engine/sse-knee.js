// SSE streams per second on one client core, stepping the number of concurrent streams until the
// gap timings degrade: the C target (c-target.c, core 1) sends 64 tokens 1 ms apart and reports
// how late its own writes were (GET /stats), so a degraded gap can be told apart: the target's
// schedule slipping, or the client reading late. Each client is pinned to core 0.
//   node bench/load-engine/sse-knee.js [SECONDS=4] [STEPS=32,48,64,80,96,128]
// Figures, never a test. Needs cc and taskset.
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { mkdtempSync } = require('node:fs');
const { join } = require('node:path');
const { tmpdir, cpus, loadavg } = require('node:os');

const seconds = process.argv[2] ?? '4';
const steps = (process.argv[3] ?? '32,48,64,80,96,128').split(',').map(Number);
const here = __dirname;
const tmp = mkdtempSync(join(tmpdir(), 'fathom-knee-'));
const bin = join(tmp, 'c-target');
const cc = spawnSync('cc', ['-O2', '-o', bin, join(here, 'c-target.c')], { encoding: 'utf8' });
if (cc.status !== 0) throw new Error(`c-target did not build: ${cc.stderr}`);
const port = 18391;
const url = `http://127.0.0.1:${port}`;
const targetCore = cpus().length > 1 ? '1' : '0';

function client(script, args, preload) {
  const out = spawnSync(
    'taskset',
    [
      '-c',
      '0',
      process.execPath,
      ...(preload ? ['-r', join(here, '..', 'ts-register.js')] : []),
      join(here, script),
      ...args,
    ],
    { encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  return JSON.parse(out.stdout.trim().split('\n').pop());
}

async function targetLateness() {
  const res = await fetch(`${url}/stats`);
  const { lateMsBuckets, counts, maxLateMs } = await res.json();
  const total = counts.reduce((a, b) => a + b, 0);
  // Share of token writes at least 1 ms late (buckets from "<2" on).
  const late1 = counts.slice(4).reduce((a, b) => a + b, 0) / Math.max(1, total);
  return { writes: total, lateOver1msShare: late1, maxLateMs, buckets: lateMsBuckets };
}

async function main() {
  const target = spawn('taskset', ['-c', targetCore, bin, String(port), '64', '1'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve) => target.stdout.once('data', resolve));
  console.log(
    `sse knee: ${seconds} s per step, 64 tokens 1 ms apart, c-target on core ${targetCore}, clients on core 0, ` +
      `node ${process.version}, ${cpus()[0].model} x${cpus().length}, load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}, ${new Date().toISOString()}`,
  );
  try {
    for (const concurrency of steps) {
      for (const [name, script, preload, extra] of [
        ['undici-bare', 'undici-stream-client.js', false, []],
        ['fathom', 'fathom-client.ts', true, ['stream']],
      ]) {
        await targetLateness(); // reset the target's counters
        const r = client(script, [url, String(concurrency), seconds, ...extra], preload);
        const late = await targetLateness();
        const line = [
          `${String(concurrency).padStart(4)} streams`,
          name.padEnd(12),
          `${(r.requests / r.wallS).toFixed(0).padStart(5)} streams/s`,
          `${(r.tokenEvents / r.wallS).toFixed(0).padStart(6)} events/s`,
          `client core busy ${(r.cpuS / r.wallS).toFixed(2)}`,
          `${((r.cpuS / r.tokenEvents) * 1e4).toFixed(3)} cpu-s/10k events`,
          r.itlP50Ms === undefined ? '' : `itl p50 ${r.itlP50Ms.toFixed(2)} p99 ${r.itlP99Ms.toFixed(2)} ms`,
          `target writes >=1 ms late ${(late.lateOver1msShare * 100).toFixed(1)} %`,
        ];
        console.log(line.filter(Boolean).join('  '));
      }
    }
  } finally {
    target.kill();
  }
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
