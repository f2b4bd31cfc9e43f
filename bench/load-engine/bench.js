// Side-by-side load-engine bench: node bench/load-engine/bench.js [SECONDS=5] [CONCURRENCY=64] [SSE_CONCURRENCY=256]
// Target pinned to core 1, each client to core 0 (taskset). Prints requests/s, client CPU seconds
// per 10,000 requests (and per 10,000 token events for streams) and ratios. Figures, never a test.
// Optional peers run when installed: wrk, hey, locust (Debian: wrk, hey, python3-locust).
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { readFileSync, writeFileSync, mkdtempSync } = require('node:fs');
const { join } = require('node:path');
const { tmpdir, cpus } = require('node:os');

const seconds = Number(process.argv[2] ?? 5);
const concurrency = Number(process.argv[3] ?? 64);
// Enough concurrent 64 ms streams that the client core, not the stream length, limits streams/s.
const streamConcurrency = Number(process.argv[4] ?? 256);
const here = __dirname;
const root = join(here, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'fathom-bench-'));
const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const clientCore = '0';
const targetCore = cpus().length > 1 ? '1' : '0';
const body = (stream) =>
  JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'hello' }], stream, max_tokens: 64 });

/**
 * The C epoll target (c-target.c, same responses as target.js) when a C compiler is here: one
 * Node core serves only ~300-400 64-token streams/s, so with target.js the target saturates
 * before the client core does. `FATHOM_BENCH_TARGET=node` forces target.js.
 */
function targetCommand() {
  if (process.env.FATHOM_BENCH_TARGET !== 'node' && has('cc')) {
    const bin = join(tmp, 'c-target');
    const cc = spawnSync('cc', ['-O2', '-o', bin, join(here, 'c-target.c')], { encoding: 'utf8' });
    if (cc.status === 0) return { name: 'c-target (C, epoll)', argv: [bin] };
    console.error(`c-target did not build, using target.js: ${cc.stderr}`);
  }
  return { name: 'target.js (Node)', argv: [process.execPath, join(here, 'target.js')] };
}

function startTarget(command, port, tokens, gapMs) {
  const child = spawn(
    'taskset',
    ['-c', targetCore, ...command.argv, String(port), String(tokens), String(gapMs)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve) => child.stdout.once('data', () => resolve(child)));
}

/** Runs a command pinned to the client core; CPU from /usr/bin/time (whole process, start-up included). */
function timed(cmd, args, env = {}) {
  const out = spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', 'taskset', '-c', clientCore, cmd, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 64 << 20,
  });
  const cpu = /CPU ([\d.]+) ([\d.]+)/.exec(out.stderr);
  return { stdout: out.stdout, stderr: out.stderr, cpuS: cpu ? Number(cpu[1]) + Number(cpu[2]) : NaN };
}

function nodeClient(script, args, preload) {
  const r = timed(process.execPath, [
    ...(preload ? ['-r', join(here, '..', 'ts-register.js')] : []),
    join(here, script),
    ...args,
  ]);
  const line = r.stdout.trim().split('\n').pop();
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`${script} printed ${r.stdout}\n${r.stderr}`);
  }
}

function wrk(url) {
  const lua = join(tmp, 'post.lua');
  writeFileSync(
    lua,
    `wrk.method = "POST"\nwrk.body = '${body(false)}'\nwrk.headers["content-type"] = "application/json"\n`,
  );
  const r = timed('wrk', [
    '-t1',
    `-c${concurrency}`,
    `-d${seconds}s`,
    '-s',
    lua,
    `${url}/v1/chat/completions`,
  ]);
  const requests = Number(/(\d+) requests in/.exec(r.stdout)?.[1]);
  return { tool: 'wrk', requests, wallS: seconds, cpuS: r.cpuS };
}

function hey(url) {
  const r = timed('hey', [
    '-z',
    `${seconds}s`,
    '-c',
    String(concurrency),
    '-m',
    'POST',
    '-T',
    'application/json',
    '-d',
    body(false),
    `${url}/v1/chat/completions`,
  ]);
  const requests = Number(/\[200\]\s+(\d+) responses/.exec(r.stdout)?.[1]);
  return { tool: 'hey', requests, wallS: seconds, cpuS: r.cpuS };
}

function locust(url, fast, stream, users = concurrency) {
  const csv = join(tmp, `locust-${fast}-${stream}`);
  const r = timed(
    'locust',
    [
      '-f',
      join(here, 'locustfile.py'),
      '--headless',
      '-u',
      String(users),
      '-r',
      String(users),
      '-t',
      `${seconds}s`,
      '--host',
      url,
      '--only-summary',
      '--csv',
      csv,
    ],
    { FAST: fast ? '1' : '0', STREAM: stream ? '1' : '0' },
  );
  const rows = readFileSync(`${csv}_stats.csv`, 'utf8').trim().split('\n');
  const header = rows[0].split(',');
  const agg = rows.find((l) => l.includes('Aggregated')).split(',');
  const requests = Number(agg[header.indexOf('Request Count')]);
  return {
    tool: `locust ${fast ? 'FastHttpUser' : 'HttpUser'}${stream ? ' (stream)' : ''}`,
    requests,
    wallS: seconds,
    cpuS: r.cpuS,
    note: 'CPU includes Python start-up',
  };
}

function table(rows, base, perEvents) {
  const baseRow = rows.find((r) => r.tool === base);
  const basePer = baseRow ? (baseRow.cpuS / baseRow.requests) * 1e4 : NaN;
  for (const r of rows) {
    const per10k = (r.cpuS / r.requests) * 1e4;
    const line = [
      r.tool.padEnd(30),
      `${(r.requests / r.wallS).toFixed(0).padStart(7)} req/s`,
      `cpu ${r.cpuS.toFixed(2).padStart(6)} s`,
      `${per10k.toFixed(3).padStart(7)} cpu-s/10k req`,
      `x${(per10k / basePer).toFixed(2)} vs ${base}`,
    ];
    // streams per client CPU-second: what one saturated client core would sustain (the one-core
    // target caps streams/s on a 2-core box before the client core is full).
    if (perEvents && r.tokenEvents)
      line.push(
        `${(r.tokenEvents / r.wallS).toFixed(0)} token events/s`,
        `${((r.cpuS / r.tokenEvents) * 1e4).toFixed(3)} cpu-s/10k events`,
        `${(r.requests / r.cpuS).toFixed(0)} streams/cpu-s`,
        `client core busy ${(r.cpuS / r.wallS).toFixed(2)}`,
      );
    if (r.itlP99Ms !== undefined && r.itlP99Ms !== null) line.push(`itl p99 ${r.itlP99Ms.toFixed(2)} ms`);
    if (r.errors) line.push(`errors ${r.errors}`);
    if (r.note) line.push(`(${r.note})`);
    console.log(line.join('  '));
  }
}

async function main() {
  console.log(
    `load-engine bench: ${seconds} s per tool, ${concurrency} connections, node ${process.version}, ${cpus()[0].model} x${cpus().length}, ${new Date().toISOString()}`,
  );
  const target = targetCommand();
  console.log(`target ${target.name} on core ${targetCore}, clients on core ${clientCore}`);
  const jsonTarget = await startTarget(target, 18089, 64, 1);
  const url = 'http://127.0.0.1:18089';
  const rows = [];
  try {
    rows.push(nodeClient('autocannon-client.js', [url, String(concurrency), String(seconds)], false));
    rows.push(nodeClient('fathom-client.ts', [url, String(concurrency), String(seconds), 'json'], true));
    if (has('wrk')) rows.push(wrk(url));
    if (has('hey')) rows.push(hey(url));
    if (has('locust')) rows.push(locust(url, true, false), locust(url, false, false));
    console.log(
      '\nnon-streaming chat completion (client CPU is the figure; req/s is capped by the one-core target)',
    );
    table(rows, 'autocannon', false);

    const streams = [];
    const sse = String(streamConcurrency);
    streams.push(nodeClient('undici-stream-client.js', [url, sse, String(seconds)], false));
    streams.push(nodeClient('fathom-client.ts', [url, sse, String(seconds), 'stream'], true));
    if (has('locust')) streams.push(locust(url, false, true, streamConcurrency));
    for (const s of streams)
      if (!s.tokenEvents && s.tool.startsWith('locust')) s.tokenEvents = s.requests * 67; // 64 tokens + finish + usage + [DONE]
    console.log(
      `\nSSE streams (64 tokens, 1 ms apart, ${streamConcurrency} concurrent): streams/s = req/s; ` +
        'client core busy = cpu / wall (1.00: the client core is what limits)',
    );
    table(streams, 'undici-bare', true);
  } finally {
    jsonTarget.kill();
  }
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
