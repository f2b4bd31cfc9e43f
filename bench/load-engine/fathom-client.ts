// Fathom's engine as a bench client: a closed profile, full accounting (every request recorded,
// HDR windows merged), CPU measured in-process around the run. Prints one JSON line.
// Usage: node -r ./bench/ts-register.js bench/load-engine/fathom-client.ts URL CONCURRENCY SECONDS stream|json [RATE] [--gc-at S]
// RATE: a constant-rate profile (requests per second, at most CONCURRENCY in flight); none: closed.
// --gc-at S: a full GC forced S seconds into the measured run; the line then also gives requests
// per second and GC time (ms per second, from the process's `gc` performance entries) before
// and after it. A long run has full GCs of its own; this brings the first one forward, so a
// 20 s run shows how the engine fares once its first full GC is behind it.
import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CampaignSpecSchema } from '@fathom/contracts';
import { mergeWindows, runShard, type WindowSnapshot } from '@fathom/load';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const gcAt = argv.indexOf('--gc-at');
  const gcAtS = gcAt === -1 ? null : Number(argv.splice(gcAt, 2)[1]);
  const [url, concurrency, seconds, mode, rate] = argv;
  const spec = CampaignSpecSchema.parse({
    name: 'bench',
    target: { baseUrl: `${url}/v1` },
    scenario: { type: 'chat', model: 'bench', prompts: ['hello'], stream: mode === 'stream', maxTokens: 64 },
    load: {
      concurrency: Number(concurrency),
      durationMs: Number(seconds) * 1000,
      recordSampleRate: 1,
      ...(rate ? { profile: { type: 'constant-rate', ratePerSec: Number(rate) } } : {}),
    },
  });
  const windows: WindowSnapshot[] = [];
  let records = 0;
  const sink = { record: () => void records++, window: (w: WindowSnapshot) => void windows.push(w) };
  const run = (durationMs: number) =>
    runShard({
      spec: { ...spec, load: { ...spec.load, durationMs } },
      shard: { index: 0, count: 1 },
      runId: 'bench',
      campaignId: 'b',
      generatorId: 'g',
      sink,
      signal: new AbortController().signal,
    });
  await run(500); // warm-up (JIT, connection set-up) outside the measurement
  windows.length = 0;
  records = 0;
  const gcMs: { at: number; ms: number }[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMs.push({ at: e.startTime, ms: e.duration });
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  let forcedAt: number | null = null;
  if (gcAtS !== null) {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    setTimeout(() => {
      forcedAt = performance.now();
      gc();
    }, gcAtS * 1000);
  }
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const counts = await run(Number(seconds) * 1000);
  gcObserver.disconnect();
  const wallS = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu);
  const merged = mergeWindows(windows);
  const cpuS = (used.user + used.system) / 1e6;
  console.log(
    JSON.stringify({
      tool: 'fathom',
      requests: counts.sent,
      errors: counts.errors,
      records,
      wallS,
      cpuS,
      tokenEvents: merged.quantiles.itl.count + merged.quantiles.ttft.count,
      itlP50Ms: merged.quantiles.itl.p50,
      itlP99Ms: merged.quantiles.itl.p99,
      ttftP99Ms: merged.quantiles.ttft.p99,
      ...(forcedAt === null ? {} : aroundGc(forcedAt, t0, performance.now(), windows, gcMs)),
    }),
  );
}
/** Requests per second and GC ms per second before the forced GC and after it (its own pause left out). */
function aroundGc(
  forcedAt: number,
  t0: number,
  t1: number,
  windows: WindowSnapshot[],
  gcMs: { at: number; ms: number }[],
): Record<string, number> {
  const forcedEpoch = Date.now() - (performance.now() - forcedAt);
  const before = windows.filter((w) => w.windowStart + w.windowMs <= forcedEpoch);
  const after = windows.filter((w) => w.windowStart >= forcedEpoch);
  const rate = (ws: WindowSnapshot[]) =>
    ws.reduce((n, w) => n + w.requests, 0) / Math.max(1e-9, ws.reduce((s, w) => s + w.windowMs, 0) / 1000);
  const gcPerS = (from: number, to: number) =>
    gcMs.filter((g) => g.at >= from && g.at < to).reduce((s, g) => s + g.ms, 0) / ((to - from) / 1000);
  return {
    requestsPerSecBeforeGc: Math.round(rate(before)),
    requestsPerSecAfterGc: Math.round(rate(after)),
    gcMsPerSecBefore: Number(gcPerS(t0, forcedAt).toFixed(1)),
    gcMsPerSecAfter: Number(gcPerS(forcedAt + 1000, t1).toFixed(1)),
  };
}

void main();
