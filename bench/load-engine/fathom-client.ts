// Fathom's engine as a bench client: a closed profile, full accounting (every request recorded,
// HDR windows merged), CPU measured in-process around the run. Prints one JSON line.
// Usage: node -r ./bench/ts-register.js bench/load-engine/fathom-client.ts URL CONCURRENCY SECONDS stream|json [RATE]
// RATE: a constant-rate profile (requests per second, at most CONCURRENCY in flight); none: closed.
import { CampaignSpecSchema } from '@fathom/contracts';
import { mergeWindows, runShard, type WindowSnapshot } from '@fathom/load';

async function main(): Promise<void> {
  const [url, concurrency, seconds, mode, rate] = process.argv.slice(2);
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
    runShard({ spec: { ...spec, load: { ...spec.load, durationMs } }, shard: { index: 0, count: 1 }, runId: 'bench', campaignId: 'b', generatorId: 'g', sink, signal: new AbortController().signal });
  await run(500); // warm-up (JIT, connection set-up) outside the measurement
  windows.length = 0;
  records = 0;
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const counts = await run(Number(seconds) * 1000);
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
    }),
  );
}
void main();
