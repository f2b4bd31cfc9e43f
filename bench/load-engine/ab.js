// Alternating A/B of client CPU on a noisy machine: one target (core 1), then per round
// autocannon, Fathom from another tree ("before") and Fathom from this tree ("after"), each pinned
// to core 0, in turn; and the same for SSE streams with the bare undici reader as the peer.
// Usage: node bench/load-engine/ab.js BEFORE_TREE [ROUNDS=3] [SECONDS=5] [CONCURRENCY=64] [json|stream|both]
// BEFORE_TREE: a copy of the workspace to compare against (its own bench/ts-register.js and libs/;
// node_modules may be a symlink to this one). Even rounds run "after" before "before": the client
// run later in a round measured up to ~8 % cheaper here, so compare over an even number of rounds.
// FATHOM_BENCH_PORT: the target's port (default 18090). Figures, never a test.
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { join, resolve } = require('node:path');
const { cpus, loadavg } = require('node:os');

const [beforeArg, rounds = '3', seconds = '5', concurrency = '64', modes = 'both'] = process.argv.slice(2);
const beforeTree = beforeArg && resolve(beforeArg);
if (!beforeTree)
  throw new Error('usage: ab.js BEFORE_TREE [ROUNDS] [SECONDS] [CONCURRENCY] [json|stream|both]');
const here = __dirname;
const port = Number(process.env.FATHOM_BENCH_PORT ?? 18090);
if (!Number.isInteger(port) || port < 1 || port > 65535)
  throw new Error(`FATHOM_BENCH_PORT must be a TCP port, got ${process.env.FATHOM_BENCH_PORT}`);
const targetCore = cpus().length > 1 ? '1' : '0';

function client(tree, script, args, preload) {
  const dir = join(tree, 'bench', 'load-engine');
  const out = spawnSync(
    'taskset',
    [
      '-c',
      '0',
      process.execPath,
      ...(preload ? ['-r', join(tree, 'bench', 'ts-register.js')] : []),
      join(dir, script),
      ...args,
    ],
    { encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  const line = out.stdout.trim().split('\n').pop();
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`${script} printed ${out.stdout}\n${out.stderr}`);
  }
}

/** [before(), after()], run in that order on odd rounds and the other way on even ones. */
function inTurn(round, before, after) {
  if (round % 2 === 1) {
    const b = before();
    return [b, after()];
  }
  const a = after();
  return [before(), a];
}

async function main() {
  const target = spawn(
    'taskset',
    ['-c', targetCore, process.execPath, join(here, 'target.js'), String(port), '64', '1'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise((resolve) => target.stdout.once('data', resolve));
  const url = `http://127.0.0.1:${port}`;
  const args = [url, concurrency, seconds];
  const per10k = (r) => ((r.cpuS / r.requests) * 1e4).toFixed(3);
  const perEvents = (r) => ((r.cpuS / r.tokenEvents) * 1e4).toFixed(3);
  console.log(`A/B ${new Date().toISOString()} node ${process.version} ${cpus()[0].model} x${cpus().length}`);
  try {
    for (let round = 1; round <= Number(rounds); round++) {
      const load = loadavg()[0].toFixed(1);
      if (modes !== 'stream') {
        const ac = client(here + '/../..', 'autocannon-client.js', args, false);
        const [before, after] = inTurn(
          round,
          () => client(beforeTree, 'fathom-client.ts', [...args, 'json'], true),
          () => client(join(here, '..', '..'), 'fathom-client.ts', [...args, 'json'], true),
        );
        console.log(
          `json round ${round} (load ${load}): cpu-s/10k req autocannon ${per10k(ac)}, before ${per10k(before)} (x${(before.cpuS / before.requests / (ac.cpuS / ac.requests)).toFixed(2)}), after ${per10k(after)} (x${(after.cpuS / after.requests / (ac.cpuS / ac.requests)).toFixed(2)}); after/before x${(after.cpuS / after.requests / (before.cpuS / before.requests)).toFixed(3)}; req/s ${(ac.requests / ac.wallS).toFixed(0)} / ${(before.requests / before.wallS).toFixed(0)} / ${(after.requests / after.wallS).toFixed(0)}; errors ${before.errors ?? 0} / ${after.errors ?? 0}`,
        );
      }
      if (modes !== 'json') {
        const bare = client(here + '/../..', 'undici-stream-client.js', args, false);
        const [before, after] = inTurn(
          round,
          () => client(beforeTree, 'fathom-client.ts', [...args, 'stream'], true),
          () => client(join(here, '..', '..'), 'fathom-client.ts', [...args, 'stream'], true),
        );
        const row = (name, r) =>
          `${name} ${perEvents(r)} cpu-s/10k events, ${(r.requests / r.cpuS).toFixed(0)} streams/cpu-s, ${(r.requests / r.wallS).toFixed(0)} streams/s${r.itlP99Ms != null ? `, itl p99 ${r.itlP99Ms.toFixed(2)} ms` : ''}`;
        console.log(
          `sse round ${round} (load ${load}): ${row('undici-bare', bare)}; ${row('before', before)}; ${row('after', after)}; errors ${before.errors ?? 0} / ${after.errors ?? 0}`,
        );
      }
    }
  } finally {
    target.kill();
  }
}
main().catch((error) => {
  console.error(error);
  process.exit(1);
});
