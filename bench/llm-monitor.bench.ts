/**
 * LLM-as-a-monitor against the spec's figures: rules only 8.2 ms mean, 24 ms P99, 12,500 QPS;
 * with the model 47 ms mean, 116 ms P99, 3,800 QPS. Streams fragments (80 % ordinary answers,
 * 20 % anomalies, the generated corpus's phrasings made unique and a few sentences long)
 * through `LlmMonitor.assess` one at a time and in the service's 64-fragment chunks, rules only
 * and rules + the bundled ONNX head, then the cache's effect on a stream that repeats itself.
 * Latency of a fragment = the time of the `assess` call that judged it; QPS = fragments / wall
 * time, one thread. Prints figures; never fails.
 * Run: node -r ./bench/ts-register.js bench/llm-monitor.bench.ts [fragments]
 */
import { loadavg } from 'node:os';
import {
  BUNDLED_ANOMALY_MODEL,
  LlmMonitor,
  anomalyCorpus,
  type Fragment,
  type LabelledFragment,
} from '@fathom/semantic';

const SPEC = {
  rules: { meanMs: 8.2, p99Ms: 24, qps: 12_500 },
  model: { meanMs: 47, p99Ms: 116, qps: 3_800 },
};

function stream(count: number, seed: number): Fragment[] {
  const pool: LabelledFragment[] = [...anomalyCorpus('train', seed), ...anomalyCorpus('held-out', seed + 1)];
  const normal = pool.filter((f) => f.label === 'normal');
  const anomalous = pool.filter((f) => f.label !== 'normal');
  return Array.from({ length: count }, (_, i) => {
    if (i % 5 === 4)
      return { source: 'response', text: `${anomalous[i % anomalous.length].text} (ref ${seed}-${i})` };
    // An ordinary answer of 2-4 corpus sentences, about 200-600 characters.
    const parts = [0, 1, 2, 3]
      .slice(0, 2 + (i % 3))
      .map((k) => normal[(i * 7 + k * 13) % normal.length].text);
    return { source: 'response', text: `${parts.join(' ')} (ref ${seed}-${i})` };
  });
}

interface Figures {
  meanMs: number;
  p99Ms: number;
  qps: number;
}

async function measure(monitor: LlmMonitor, fragments: readonly Fragment[], batch: number): Promise<Figures> {
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < fragments.length; i += batch) {
    const chunk = fragments.slice(i, i + batch);
    const t0 = performance.now();
    await monitor.assess(chunk);
    const ms = performance.now() - t0;
    for (let k = 0; k < chunk.length; k++) latencies.push(ms);
  }
  const wallS = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    meanMs: latencies.reduce((s, v) => s + v, 0) / latencies.length,
    p99Ms: latencies[Math.min(latencies.length - 1, Math.ceil(0.99 * latencies.length) - 1)],
    qps: fragments.length / wallS,
  };
}

const fmt = (f: Figures) =>
  `mean ${f.meanMs.toFixed(3).padStart(7)} ms  P99 ${f.p99Ms.toFixed(3).padStart(7)} ms  ${Math.round(f.qps).toLocaleString('en').padStart(9)} QPS`;

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 5_000);
  if (!Number.isInteger(count) || count < 100)
    throw new Error(`fragments must be an integer >= 100, got ${process.argv[2]}`);
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(
    `llm-monitor bench: ${count} fragments per pass, node ${process.version}, load average ${load}`,
  );
  const model = await LlmMonitor.load(BUNDLED_ANOMALY_MODEL, { cacheCapacity: 1_000_000 });
  if (model.state.kind !== 'model') throw new Error(`bundled model did not load: ${model.state.reason}`);
  // Warm both paths (JIT, ORT session) on fragments no pass uses.
  await measure(LlmMonitor.rulesOnly('bench'), stream(500, 90), 64);
  await measure(model, stream(500, 91), 64);

  let seed = 100;
  for (const [name, spec, make] of [
    ['rules only', SPEC.rules, () => LlmMonitor.rulesOnly('bench', { cacheCapacity: 1_000_000 })],
    ['rules + model', SPEC.model, () => model],
  ] as const) {
    for (const batch of [1, 64]) {
      const monitor = make();
      const before = { ...monitor.stats };
      const f = await measure(monitor, stream(count, seed++), batch);
      const scored = monitor.stats.modelScored - before.modelScored;
      const flagged = monitor.stats.anomalies - before.anomalies;
      console.log(
        `${name.padEnd(14)} batch ${String(batch).padStart(2)}: ${fmt(f)}  | spec ${spec.meanMs} ms, ${spec.p99Ms} ms, ${spec.qps.toLocaleString('en')} QPS  (model scored ${scored}, flagged ${flagged})`,
      );
    }
  }

  // Cache: the same stream shape, drawn from 10 % as many distinct fragments (repeated prompts).
  const distinct = stream(Math.max(10, Math.round(count / 10)), seed++);
  let s = 7;
  const repeated = Array.from(
    { length: count },
    () => distinct[(s = (s * 1103515245 + 12345) % 2147483648) % distinct.length],
  );
  for (const [name, make] of [
    ['rules only', () => LlmMonitor.rulesOnly('bench', { cacheCapacity: 1_000_000 })],
    ['rules + model', async () => LlmMonitor.load(BUNDLED_ANOMALY_MODEL, { cacheCapacity: 1_000_000 })],
  ] as const) {
    const monitor = await make();
    const f = await measure(monitor, repeated, 64);
    const c = monitor.cacheStats;
    console.log(
      `${name.padEnd(14)} batch 64, 10 % distinct: ${fmt(f)}  | cache hits ${c.hits}/${c.hits + c.misses} (${((100 * c.hits) / (c.hits + c.misses)).toFixed(1)} %), model scored ${monitor.stats.modelScored}`,
    );
    await monitor.close();
  }
  await model.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
