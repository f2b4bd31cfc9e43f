// Full-stack bench: `fathom run` with DEFAULT settings (embedded: all five services, in-memory bus,
// embedded PostgreSQL) beside a peer, against a minimal OpenAI-compatible server that is not
// Fathom's simulator (target.js). The target is pinned to core 1; Fathom's whole process and each
// peer to core 0 (taskset); same concurrency; rounds alternate peer and Fathom, non-streamed
// (peer: autocannon) and streamed (peer: a bare undici SSE reader). Prints throughput and P50
// per round and their ratios (Fathom / peer), how busy the client's and the target's cores were
// in each run (a target core near 100 % means the target set that rate), what the target itself
// served in each run (its count beside the client's, `(=)` when they agree, and its rate from the
// first completion to the last: a ratio that no client's own time keeping can bend), what Fathom
// says its engine thread cost itself (median busy, median wait for its core), and Fathom's RSS over
// time. Figures, never a test.
//
// Usage: node bench/fullstack/bench.js [--seconds 10] [--concurrency 16] [--rounds 3]
//          [--modes json,stream] [--long-seconds 60 | --long] [--long-modes json,stream] [--port N]
//          [--dyed-peer] [--target-busy-us N]
//   --long: a 10-minute memory run, one per --long-modes (default json: non-streamed only);
//   --port: the target's port (default a random one in 18600-19599); --dyed-peer: non-streamed,
//   a second autocannon peer that sends the request headers Fathom sends (accept, traceparent,
//   x-fathom-run, x-fathom-request), so the target parses the same request from both (they cost
//   it ~9 % of its throughput here);
//   --target-busy-us: the target spins N us per completion (a target slower per request).

// Needs `npm run build` first (the CLI runs from dist/).
'use strict';
const { spawn } = require('node:child_process');
const { readFileSync, readdirSync, writeFileSync, mkdtempSync } = require('node:fs');
const { join } = require('node:path');
const { tmpdir, cpus } = require('node:os');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
};
const seconds = Number(arg('seconds', 10));
const concurrency = Number(arg('concurrency', 16));
const rounds = Number(arg('rounds', 3));
const modes = String(arg('modes', 'json,stream')).split(',');
const longSeconds = process.argv.includes('--long') ? 600 : Number(arg('long-seconds', 60));
const longModes = String(arg('long-modes', 'json')).split(',');
const here = __dirname;
const root = join(here, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'fathom-fullstack-'));
const clientCore = '0';
const targetCore = cpus().length > 1 ? '1' : '0';
const port = Number(arg('port', 18600 + Math.floor(Math.random() * 1000)));
const targetBusyUs = Number(arg('target-busy-us', 0));
const origin = `http://127.0.0.1:${port}`;
const url = `${origin}/v1`;

function startTarget() {
  const child = spawn(
    'taskset',
    ['-c', targetCore, process.execPath, join(here, 'target.js'), String(port), '16', String(targetBusyUs)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve) => child.stdout.once('data', () => resolve(child)));
}

/** The peers of a mode: autocannon non-streamed; streamed, the bare reader and the parsing reader. */
const PEERS = {
  json: [
    ['peer-autocannon.js'],
    ...(process.argv.includes('--dyed-peer') ? [['peer-autocannon.js', 'dyed']] : []),
  ],
  stream: [
    ['peer-sse.js', 'bare'],
    ['peer-sse.js', 'parse'],
  ],
};

/**
 * Runs `node ...args` pinned to the client core, sampling both cores' busy shares meanwhile;
 * `onSpawn` sees the child (for sampling its memory). Resolves with its exit code, its output and
 * the cores' figures once it has exited.
 */
function onClientCore(args, onSpawn = () => undefined) {
  return new Promise((resolve) => {
    const child = spawn('taskset', ['-c', clientCore, process.execPath, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const cores = coreSampler();
    onSpawn(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('exit', (code) => resolve({ code, stdout, stderr, cores: cores.stop() }));
  });
}

async function peer([script, ...extra]) {
  await resetServed();
  const out = await onClientCore([join(here, script), url, String(concurrency), String(seconds), ...extra]);
  const served = await servedSince();
  try {
    return { ...JSON.parse(out.stdout.trim().split('\n').pop()), cores: out.cores, served };
  } catch {
    throw new Error(`${script}: ${out.stdout}\n${out.stderr}`);
  }
}

/** The target's own count restarts (`target.js` `POST /stats/reset`). */
async function resetServed() {
  const res = await fetch(`${origin}/stats/reset`, { method: 'POST' });
  await res.arrayBuffer();
}

/**
 * What the target served since the reset, as it counts: completions, and its rate between the
 * first and the last of them (start-up and shutdown of the client left out, on both sides).
 */
async function servedSince() {
  const res = await fetch(`${origin}/stats`);
  const s = await res.json();
  const spanS = s.firstMs === null ? 0 : (s.lastMs - s.firstMs) / 1000;
  return { completions: s.completions, perSec: spanS > 0 ? s.completions / spanS : 0 };
}

/** The target's count beside the client's: `=` when they agree, else both. */
const servedText = (client, served) =>
  `target served ${served.completions}${served.completions === client ? ' (=)' : ` (client says ${client})`} at ${f1(served.perSec)} req/s`;

/** /proc/stat's jiffies of the client's and the target's cores: [user, nice, system, idle, iowait, ...] each; null off Linux. */
function coresJiffies() {
  try {
    const lines = readFileSync('/proc/stat', 'utf8').split('\n');
    const of = (core) =>
      lines
        .find((l) => l.startsWith(`cpu${core} `))
        ?.trim()
        .split(/\s+/)
        .slice(1)
        .map(Number);
    const client = of(clientCore);
    const target = of(targetCore);
    return client && target ? [client, target] : null;
  } catch {
    return null;
  }
}

/**
 * How busy the client's and the target's cores were while a client loaded the target: busy share
 * per second (all but idle and iowait, the kernel's network work included), medians over the
 * seconds in which the target's core was over 30 % busy (the load, not a client's start-up).
 * A target core near 100 % means the target, not the client, set that client's rate.
 */
function coreSampler() {
  const busy = (a, b) => {
    const total = b.reduce((x, y) => x + y, 0) - a.reduce((x, y) => x + y, 0);
    const idle = b[3] + b[4] - (a[3] + a[4]);
    return total > 0 ? 100 * (1 - idle / total) : NaN;
  };
  const seconds = [];
  let last = coresJiffies();
  const timer = setInterval(() => {
    const now = coresJiffies();
    if (now && last) seconds.push([busy(last[0], now[0]), busy(last[1], now[1])]);
    last = now;
  }, 1000);
  return {
    stop() {
      clearInterval(timer);
      const load = seconds.filter(([, target]) => target > 30);
      if (clientCore === targetCore || load.length === 0) return null;
      return { client: median(load.map((s) => s[0])), target: median(load.map((s) => s[1])) };
    },
  };
}

const coresText = (c) =>
  c ? `, cores: client ${c.client.toFixed(0)} %, target ${c.target.toFixed(0)} % busy` : '';

/** A campaign with nothing but what a new user writes: every load setting is Fathom's default. */
function campaignFile(mode, durationS) {
  const file = join(tmp, `${mode}-${durationS}.yaml`);
  writeFileSync(
    file,
    [
      `name: fullstack ${mode}`,
      `target: { baseUrl: "${url}" }`,
      `scenario: { type: chat, model: bench, prompts: [hello], maxTokens: 16, stream: ${mode === 'stream'} }`,
      `load: { concurrency: ${concurrency}, durationMs: ${durationS * 1000} }`,
      '',
    ].join('\n'),
  );
  return file;
}

/**
 * RSS of a process and its descendants: `bin/fathom.js` runs a long-running command in a child
 * node (with MALLOC_ARENA_MAX set), so the process spawned here is only its launcher.
 */
function rssMiB(pid) {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    if (!kb) return null;
    let mib = Number(kb) / 1024;
    for (const tid of readdirSync(`/proc/${pid}/task`))
      for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8')
        .split(' ')
        .filter(Boolean))
        mib += rssMiB(Number(child)) ?? 0;
    return mib;
  } catch {
    return null;
  }
}

/** `fathom run FILE --json` on the client core; RSS of its process sampled every `sampleMs`. */
async function fathom(mode, durationS, sampleMs = 500) {
  const t0 = Date.now();
  const rss = [];
  let sampler;
  await resetServed();
  const out = await onClientCore(
    [join(root, 'bin', 'fathom.js'), 'run', campaignFile(mode, durationS), '--json'],
    (child) => {
      sampler = setInterval(() => {
        const mib = rssMiB(child.pid);
        if (mib !== null) rss.push({ atS: (Date.now() - t0) / 1000, mib });
      }, sampleMs);
    },
  );
  clearInterval(sampler);
  const served = await servedSince();
  let s;
  try {
    s = JSON.parse(out.stdout).summary;
  } catch {
    throw new Error(`fathom run exited ${out.code}: ${out.stderr}\n${out.stdout.slice(0, 2000)}`);
  }
  return {
    tool: 'fathom run',
    exitCode: out.code,
    requests: s.requests,
    errors: s.errors,
    requestsPerSec: s.throughput.requestsPerSec,
    p50Ms: s.latencyMs.e2e.p50,
    records: s.sampling?.records ?? null,
    semanticChecked: s.sampling?.semanticChecked ?? null,
    validity: s.validity?.valid === false ? s.validity.reasons.map((r) => r.kind).join(',') : 'valid',
    // What the generator cost itself (medians over its judged windows; core wait on Linux).
    engineBusy: s.validity?.generator?.loopUtilizationMedian ?? null,
    coreWait: s.validity?.generator?.coreWaitShareMedian ?? null,
    rss,
    cores: out.cores,
    served,
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length
    ? s.length % 2
      ? s[(s.length - 1) / 2]
      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
    : NaN;
};
const f1 = (x) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(1));
const pct = (x) => (x === null || x === undefined ? '-' : `${(x * 100).toFixed(0)} %`);
/** Milliseconds: three decimals below 1 ms, where one printed a loopback P50 as 0.0. */
const fms = (x) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(x < 1 ? 3 : 1));

async function main() {
  console.log(
    `full-stack bench: ${seconds} s per run, ${concurrency} concurrent, ${rounds} rounds, node ${process.version}, ` +
      `${cpus()[0].model} x${cpus().length}, ${new Date().toISOString()}`,
  );
  console.log(
    `target ${join('bench/fullstack', 'target.js')} on core ${targetCore}${targetBusyUs ? ` (spinning ${targetBusyUs} us per completion)` : ''}; fathom run (defaults) and peers on core ${clientCore}`,
  );
  const target = await startTarget();
  try {
    for (const mode of rounds > 0 ? modes : []) {
      const scripts = PEERS[mode];
      const ratios = scripts.map(() => ({ throughput: [], p50: [], served: [] }));
      console.log(
        `\n${mode === 'json' ? 'non-streamed (peer: autocannon)' : 'streamed, 16 tokens (peers: a bare undici SSE reader; one that parses each event as serving benchmarks do)'}`,
      );
      for (let round = 1; round <= rounds; round++) {
        // Alternate who goes first, so a drift in the machine's load favours neither.
        const order = round % 2 ? ['peer', 'fathom'] : ['fathom', 'peer'];
        const peers = [];
        let f;
        for (const who of order) {
          if (who === 'peer') for (const script of scripts) peers.push(await peer(script));
          else f = await fathom(mode, seconds);
        }
        const parts = peers.map((p, i) => {
          const tr = f.requestsPerSec / p.requestsPerSec;
          const pr = f.p50Ms / p.p50Ms;
          ratios[i].throughput.push(tr);
          ratios[i].p50.push(pr);
          ratios[i].served.push(f.served.perSec / p.served.perSec);
          return `${p.tool} ${f1(p.requestsPerSec)} req/s P50 ${fms(p.p50Ms)} ms${coresText(p.cores)}, ${servedText(p.requests, p.served)}: throughput x${tr.toFixed(2)}, P50 x${pr.toFixed(2)}`;
        });
        console.log(
          `  round ${round}: fathom ${f1(f.requestsPerSec)} req/s P50 ${fms(f.p50Ms)} ms (${f.records} records, ` +
            `${f.semanticChecked} checked, ${f.validity}, engine busy ${pct(f.engineBusy)} and waiting for its core ${pct(f.coreWait)}, RSS max ${f1(Math.max(...f.rss.map((r) => r.mib)))} MiB${coresText(f.cores)}, ${servedText(f.requests, f.served)}) | ${parts.join(' | ')}`,
        );
      }
      scripts.forEach((argv, i) =>
        console.log(
          `  median against ${argv.join(' ')}: throughput x${median(ratios[i].throughput).toFixed(2)} of the peer (goal >= 0.9), ` +
            `P50 x${median(ratios[i].p50).toFixed(2)} (goal <= 1.25); as the target counted, first to last completion: ` +
            `x${median(ratios[i].served).toFixed(2)}`,
        ),
      );
    }
    for (const mode of longSeconds > 0 ? longModes : []) {
      const kind = mode === 'stream' ? 'streamed' : 'non-streamed';
      console.log(`\nmemory: one ${kind} fathom run of ${longSeconds} s, RSS sampled every second`);
      const f = await fathom(mode, longSeconds, 1000);
      const during = f.rss.filter((r) => r.atS > 5);
      const step = Math.max(1, Math.floor(during.length / 10));
      console.log(
        `  RSS MiB over time: ${during
          .filter((_, i) => i % step === 0)
          .map((r) => `${r.atS.toFixed(0)}s ${r.mib.toFixed(0)}`)
          .join(', ')}`,
      );
      const half = during.filter((r) => r.atS >= during[during.length - 1].atS / 2);
      const growth = half.length > 1 ? half[half.length - 1].mib - half[0].mib : NaN;
      console.log(
        `  ${f.requests} requests at ${f1(f.requestsPerSec)} req/s, ${servedText(f.requests, f.served)}; RSS max ${f1(Math.max(...during.map((r) => r.mib)))} MiB; ` +
          `second half: ${f1(half[0]?.mib)} -> ${f1(half[half.length - 1]?.mib)} MiB (${growth >= 0 ? '+' : ''}${f1(growth)} MiB)`,
      );
    }
  } finally {
    target.kill();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
