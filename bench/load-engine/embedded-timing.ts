// Timing of the embedded services (`npm start`'s shape: all five in one process, in-memory bus,
// PGlite) against the simulated target's ground truth, with the load engine inline (on the
// services' event loop) and on its own worker thread (FATHOM_ENGINE_THREAD), alternating.
// Figures only.
//   node -r ./bench/ts-register.js bench/load-engine/embedded-timing.ts [STREAMS=150] [SECONDS=6] [ROUNDS=2] [MAX_TOKENS=64]
//
// What is compared: the records the run published on the bus (what the analyzer and the
// semantic-monitor read), joined by `x-fathom-request` with GET /sim/requests/:id (the target's
// write time of every token). ITL error = |our gap - the target's gap| per token pair. TTFT:
// our first receipt (record.startedAt + chunkOffsetsMs[0], epoch) minus the target's first
// write (first token lag). startedAt comes from the engine's Date.now() origin, which is whole
// milliseconds, so that lag carries a constant offset of up to 1 ms per run. TTFT error =
// |our TTFT - the target's (its arrival stamp to its first write)|: durations, no clock offset,
// but ours also holds the request's way to the target (loopback, the target's accept queue).
import { cpus, loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Topics, type RequestRecord } from '@fathom/contracts';
import { startSimProcess } from '../../libs/load/src/__fixtures__/sim-process';
import { quantile, quantiles, type Quantiles } from '../../libs/load/src/__fixtures__/timing-accuracy';
import { startEmbedded } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

interface GroundTruth {
  fathomRequestId: string | null;
  arrivalEpochMs: number;
  tokenEmitEpochMs: number[];
}

/** Every ground-truth record the target holds, by the client's request id (ids are sequential). */
async function groundTruth(
  simUrl: string,
  from: number,
): Promise<{ byRequest: Map<string, GroundTruth>; next: number }> {
  const byRequest = new Map<string, GroundTruth>();
  let n = from;
  for (let misses = 0; misses < 50;) {
    const ids = Array.from({ length: 50 }, (_, i) => `sim-${(n + i).toString(36).padStart(6, '0')}`);
    const found = await Promise.all(
      ids.map(async (id) => {
        const response = await fetch(`${simUrl}/sim/requests/${id}`);
        return response.ok ? ((await response.json()) as GroundTruth) : null;
      }),
    );
    for (const truth of found) {
      if (truth === null) misses++;
      else if (truth.fathomRequestId !== null) byRequest.set(truth.fathomRequestId, truth);
    }
    n += ids.length;
  }
  return { byRequest, next: n - 100 };
}

async function measure(
  mode: 'inline' | 'worker',
  simUrl: string,
  options: { streams: number; durationMs: number; maxTokens: number },
) {
  process.env.FATHOM_ENGINE_THREAD = mode;
  const sut = await startEmbedded({ dataDir: null, logLevels: false });
  try {
    const records: RequestRecord[] = [];
    let runId = '';
    const subscription = await sut.bus.subscribe(
      Topics.requestTelemetry,
      { group: `bench-${mode}-${Date.now()}` },
      (event) => {
        if (event.runId === runId) records.push(...event.records);
      },
    );
    const loop = monitorEventLoopDelay({ resolution: 1 });
    const cpuBefore = process.cpuUsage();
    loop.enable();
    const created = await fetch(`${sut.url}/v1/campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `embedded timing ${mode}`,
        target: { baseUrl: `${simUrl}/v1` },
        scenario: {
          type: 'chat',
          model: 'fathom-sim-8b',
          prompts: ['Explain prefix caching.', 'Name three rivers.', 'Summarise the plot of Hamlet.'],
          maxTokens: options.maxTokens,
          logprobs: true,
          topLogprobs: 5,
        },
        load: { concurrency: options.streams, durationMs: options.durationMs, requestTimeoutMs: 20_000 },
      }),
    });
    if (created.status !== 201)
      throw new Error(`campaign refused: ${created.status} ${await created.text()}`);
    runId = ((await created.json()) as { runId: string }).runId;
    const run = await waitForRun(sut.runs, runId, { timeoutMs: options.durationMs + 60_000 });
    loop.disable();
    const cpu = process.cpuUsage(cpuBefore);
    await subscription.close();
    return {
      records,
      status: run.status,
      mainLoopDelayMs: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      processCpuMs: (cpu.user + cpu.system) / 1000,
    };
  } finally {
    await sut.close();
  }
}

async function main(): Promise<void> {
  const streams = Number(process.argv[2] ?? 150);
  const durationMs = Number(process.argv[3] ?? 6) * 1000;
  const rounds = Number(process.argv[4] ?? 2);
  const maxTokens = Number(process.argv[5] ?? 64);
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(`${cpus().length} x ${cpus()[0]?.model}, Node ${process.version}, load ${load()}`);
  console.log(
    `${streams} streams, ${durationMs / 1000} s, ${maxTokens} tokens, logprobs top 5, ${new Date().toISOString()}`,
  );
  const sim = await startSimProcess({
    seed: 7,
    engine: { maxNumSeqs: Math.max(256, streams), maxNumBatchedTokens: 16384, numBlocks: 16384 },
    output: { hallucinationRate: 0 },
  });
  let nextSimId = 0;
  const f = (x: number) => x.toFixed(3);
  const q = (x: Quantiles) => `p50 ${f(x.p50)} p90 ${f(x.p90)} p99 ${f(x.p99)} max ${x.max.toFixed(1)}`;
  try {
    for (let round = 1; round <= rounds; round++) {
      // Alternate which mode goes first, so a drift in the machine's load does not favour one.
      const order = round % 2 === 1 ? (['inline', 'worker'] as const) : (['worker', 'inline'] as const);
      for (const mode of order) {
        const m = await measure(mode, sim.url, { streams, durationMs, maxTokens });
        const truth = await groundTruth(sim.url, nextSimId);
        nextSimId = truth.next;
        const gapErrors: number[] = [];
        const firstLags: number[] = [];
        const ttftErrors: number[] = [];
        let unjoined = 0;
        let mismatched = 0;
        for (const record of m.records) {
          if (record.errorClass !== null) continue;
          const t = truth.byRequest.get(record.requestId);
          if (!t) {
            unjoined++;
            continue;
          }
          const ours = record.chunkOffsetsMs;
          const emit = t.tokenEmitEpochMs;
          if (ours.length !== emit.length || ours.length === 0) {
            mismatched++;
            continue;
          }
          firstLags.push(record.startedAt + ours[0] - emit[0]);
          // Our TTFT against the target's (arrival to first write): both durations, no clock offset;
          // ours also holds the request's way to the target (loopback, its accept queue).
          ttftErrors.push(Math.abs(ours[0] - (emit[0] - t.arrivalEpochMs)));
          for (let k = 1; k < ours.length; k++)
            gapErrors.push(Math.abs(ours[k] - ours[k - 1] - (emit[k] - emit[k - 1])));
        }
        const floor = quantile(
          [...firstLags].sort((a, b) => a - b),
          0.001,
        );
        console.log(
          `round ${round} ${mode} (load ${load()}): run ${m.status}, ${m.records.length} records, ${gapErrors.length} gaps, unjoined ${unjoined}, mismatched ${mismatched}\n` +
            `  ITL error ms                 ${q(quantiles(gapErrors))}\n` +
            `  TTFT error ms                ${q(quantiles(ttftErrors))}\n` +
            `  first token lag ms           ${q(quantiles(firstLags))} (floor p0.1 ${f(floor)}; +-1 ms epoch rounding)\n` +
            `  main thread loop delay ms    p99 ${m.mainLoopDelayMs.p99.toFixed(1)} max ${m.mainLoopDelayMs.max.toFixed(1)}; process CPU ${(m.processCpuMs / 1000).toFixed(1)} s`,
        );
      }
    }
  } finally {
    await sim.close();
  }
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
