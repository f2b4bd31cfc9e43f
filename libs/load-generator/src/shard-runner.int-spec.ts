import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { createBus, type Bus } from '@fathom/bus';
import {
  CampaignSpecSchema,
  Topics,
  envelope,
  type CampaignSpec,
  type RequestRecord,
  type RunLifecycle,
} from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import {
  EngineThread,
  InlineShardHost,
  ThreadShardHost,
  startEngineThreadEarly,
  type ShardHost,
} from './engine-thread';
import { ShardControls } from './shard-controls';
import { ShardRunnerService } from './shard-runner.service';
import { parseLoadGeneratorSettings } from './load-generator.settings';

interface ShardOutcome {
  readonly lifecycle: RunLifecycle[];
  readonly records: RequestRecord[];
  readonly end: RunLifecycle;
  /** Epoch ms the shard-started event arrived. */
  readonly startedAt: number;
  readonly endedAt: number;
}

/** A load-generator on its own in-memory bus, running shards with `engine`. */
async function startGenerator(engine: ShardHost) {
  const bus: Bus = await createBus({ kind: 'memory' });
  const sut = new ShardRunnerService(bus, new Registry(), engine, parseLoadGeneratorSettings({}));
  await sut.onModuleInit();
  /** Publishes a one-shard plan and resolves when it ends; `during` runs once the shard started. */
  const run = async (
    spec: CampaignSpec,
    during?: (runId: string) => Promise<void>,
  ): Promise<ShardOutcome> => {
    const campaignId = randomUUID();
    const runId = randomUUID();
    const lifecycle: RunLifecycle[] = [];
    const records: RequestRecord[] = [];
    let startedAt = 0;
    let ended!: (end: RunLifecycle) => void;
    const end = new Promise<RunLifecycle>((resolve) => (ended = resolve));
    let started!: () => void;
    const start = new Promise<void>((resolve) => (started = resolve));
    const subscriptions = await Promise.all([
      bus.subscribe(Topics.runLifecycle, { group: `test-lifecycle-${runId}` }, (event) => {
        if (event.runId !== runId) return;
        lifecycle.push(event);
        if (event.phase === 'shard-started') {
          startedAt = Date.now();
          started();
        } else ended(event);
      }),
      bus.subscribe(Topics.requestTelemetry, { group: `test-records-${runId}` }, (event) => {
        if (event.runId === runId) records.push(...event.records);
      }),
    ]);
    await bus.publish(Topics.runShard, {
      ...envelope(campaignId, runId),
      kind: 'start-shard',
      shard: { index: 0, count: 1 },
      spec,
      trigger: 'api',
    });
    if (during) {
      await start;
      await during(runId);
    }
    const last = await end;
    const endedAt = Date.now();
    await Promise.all(subscriptions.map((s) => s.close()));
    return { lifecycle, records, end: last, startedAt, endedAt };
  };
  const abort = (runId: string) =>
    bus.publish(Topics.runControl, { ...envelope(randomUUID(), runId), kind: 'abort', reason: 'test' });
  const breaker = (runId: string, to: 'open' | 'closed', paths: string[]) =>
    bus.publish(Topics.breaker, {
      ...envelope(randomUUID(), runId),
      breaker: { target: 'sim', layer: 'llm', node: 'chat' },
      from: to === 'open' ? 'closed' : 'open',
      to,
      reason: 'test',
      paths,
    });
  const close = async () => {
    await sut.onApplicationShutdown();
    await bus.close();
  };
  return { run, abort, breaker, close };
}

/** Each shard on a fresh `EngineThread`, which `meddle` gets first (to end it, as a crash would). */
function engineWith(meddle: (thread: EngineThread) => void): ShardHost {
  return {
    warm: () => Promise.resolve(),
    close: async () => undefined,
    run: (options) => {
      const thread = new EngineThread().bind(options);
      meddle(thread);
      return thread;
    },
  };
}

describe(ShardRunnerService.name, () => {
  let sim: SimTarget;

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } });
  });

  afterAll(async () => {
    await sim?.close();
  });

  const specOf = (load: Record<string, unknown>, scenario: Record<string, unknown> = {}) =>
    CampaignSpecSchema.parse({
      name: 'engine thread',
      target: { baseUrl: `${sim.url}/v1` },
      scenario: { type: 'chat', prompts: ['Tell me about load testing.'], maxTokens: 32, ...scenario },
      load,
    });

  it('publishes exactly the records an inline shard publishes, with logprobs, when the engine runs in a worker', async () => {
    // Constant rate: the same 60 arrivals in both runs; half of them sampled by the seeded sampler.
    const spec = specOf(
      {
        concurrency: 20,
        durationMs: 1_500,
        recordSampleRate: 0.5,
        profile: { type: 'constant-rate', seed: 7, ratePerSec: 40 },
      },
      { logprobs: true, topLogprobs: 5 },
    );
    const outcomes: Record<string, ShardOutcome> = {};
    for (const [mode, engine] of [
      ['inline', new InlineShardHost()],
      ['worker', new ThreadShardHost()],
    ] as const) {
      const generator = await startGenerator(engine);
      try {
        outcomes[mode] = await generator.run(spec);
      } finally {
        await generator.close();
      }
    }
    const { inline, worker } = outcomes;

    for (const outcome of [inline, worker]) {
      expect(outcome.end.phase).toBe('shard-finished');
      expect(outcome.end.counts.sent).toBe(60);
      expect(outcome.end.counts.errors).toBe(0);
      expect(outcome.records).toHaveLength(outcome.end.counts.recordsPublished);
      expect(outcome.records.every((r) => (r.logprobs?.length ?? 0) > 0)).toBe(true);
    }
    expect(worker.end.counts.recordsPublished).toBe(inline.end.counts.recordsPublished);
    expect(worker.end.counts.recordsPublished).toBeGreaterThan(10);
    expect(worker.end.counts.windowsPublished).toBeGreaterThanOrEqual(2);
    const seqs = (o: ShardOutcome) =>
      o.records.map((r) => Number(r.requestId.split('-').pop())).sort((a, b) => a - b);
    expect(new Set(seqs(worker)).size).toBe(worker.records.length);
  }, 30_000);

  it('adopts the engine thread started early as its first spare', async () => {
    startEngineThreadEarly();
    let made = 0;
    const host = new ThreadShardHost(5_000, () => (made++, new EngineThread()));
    try {
      await host.warm();
      expect(made).toBe(0);
      // Adopted once: the next host makes its own.
      const other = new ThreadShardHost(5_000, () => (made++, new EngineThread()));
      await other.warm();
      await other.close();
      expect(made).toBe(1);
    } finally {
      await host.close();
    }
  }, 30_000);

  it('starts the next spare a while after a shard ends, not at once', async () => {
    let made = 0;
    const host = new ThreadShardHost(1_500, () => (made++, new EngineThread()));
    const generator = await startGenerator(host);
    try {
      const outcome = await generator.run(specOf({ concurrency: 2, durationMs: 300 }));
      expect(outcome.end.phase).toBe('shard-finished');
      // The boot spare ran the shard; no other thread yet.
      expect(made).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(made).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(made).toBe(2);
    } finally {
      await generator.close();
    }
  }, 30_000);

  it('stops a worker shard within a second of the run abort', async () => {
    const generator = await startGenerator(new ThreadShardHost());
    let abortAt = 0;
    try {
      const outcome = await generator.run(
        specOf({ concurrency: 8, durationMs: 60_000 }, { maxTokens: 4096 }),
        async (runId) => {
          // Let the worker load and put requests in flight before the abort lands.
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          abortAt = Date.now();
          await generator.abort(runId);
        },
      );
      expect(outcome.end.phase).toBe('shard-finished');
      expect(outcome.end.reason).toBe('run aborted');
      expect(outcome.end.counts.sent).toBeGreaterThan(0);
      expect(outcome.endedAt - abortAt).toBeLessThanOrEqual(1_000);
      expect(outcome.records).toHaveLength(outcome.end.counts.recordsPublished);
    } finally {
      await generator.close();
    }
  }, 30_000);

  it('fails the shard, never announcing it, when its worker dies before it is ready', async () => {
    const generator = await startGenerator(
      engineWith((thread) => {
        void thread.terminate();
      }),
    );
    try {
      const outcome = await generator.run(specOf({ concurrency: 4, durationMs: 60_000 }));
      expect(outcome.lifecycle.map((l) => l.phase)).toEqual(['shard-failed']);
      // Ended before it ran any code: the exit code is 0 or 1 depending on how far it got.
      expect(outcome.end.reason).toMatch(
        /^load engine failed: engine worker exited \(code \d\) before reporting its result$/,
      );
      expect(outcome.end.counts.sent).toBe(0);
    } finally {
      await generator.close();
    }
  }, 30_000);

  it('fails the shard with the reason when its worker dies mid-run', async () => {
    const generator = await startGenerator(
      engineWith((thread) => {
        void thread.ready.then(() => setTimeout(() => void thread.terminate(), 1_000));
      }),
    );
    try {
      const outcome = await generator.run(specOf({ concurrency: 4, durationMs: 60_000 }));
      expect(outcome.end.phase).toBe('shard-failed');
      expect(outcome.end.reason).toMatch(
        /^load engine failed: engine worker exited \(code 1\) before reporting its result$/,
      );
      // What reached the main thread before the crash is still published and counted.
      expect(outcome.lifecycle[0].phase).toBe('shard-started');
      expect(outcome.records).toHaveLength(outcome.end.counts.recordsPublished);
      expect(outcome.records.length).toBeGreaterThan(0);
      expect(outcome.endedAt - outcome.startedAt).toBeLessThan(5_000);
    } finally {
      await generator.close();
    }
  }, 30_000);
  it.each([
    ['inline', () => new InlineShardHost()],
    ['worker', () => new ThreadShardHost()],
  ] as const)(
    'stops sending on a path while its breaker is open and resumes when it closes (%s)',
    async (_mode, engine) => {
      const spec = specOf({
        concurrency: 4,
        durationMs: 2_500,
        profile: { type: 'constant-rate', seed: 3, ratePerSec: 40 },
      });
      const generator = await startGenerator(engine());
      try {
        let openedAt = 0;
        let closedAt = 0;
        const outcome = await generator.run(spec, async (runId) => {
          await new Promise((resolve) => setTimeout(resolve, 500));
          openedAt = Date.now();
          await generator.breaker(runId, 'open', ['/v1/chat/completions']);
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          closedAt = Date.now();
          await generator.breaker(runId, 'closed', ['/v1/chat/completions']);
        });
        expect(outcome.end.phase).toBe('shard-finished');
        const started = outcome.records.map((r) => r.startedAt);
        // Nothing sent while open (100 ms for the event to reach the engine), load before and after.
        expect(started.filter((t) => t > openedAt + 100 && t < closedAt)).toEqual([]);
        expect(started.some((t) => t < openedAt)).toBe(true);
        expect(started.some((t) => t > closedAt)).toBe(true);
      } finally {
        await generator.close();
      }
    },
    30_000,
  );

  it.each([
    ['inline', () => new InlineShardHost()],
    ['worker', () => new ThreadShardHost()],
  ] as const)(
    'hands GPU memory readings to the adaptive profile, which backs off over its ceiling (%s)',
    async (_mode, make) => {
      const spec = specOf({
        concurrency: 8,
        durationMs: 1_500,
        profile: {
          type: 'adaptive',
          p95BudgetMs: 60_000,
          initialConcurrency: 2,
          intervalMs: 200,
          gpuMemoryCeiling: 0.8,
        },
      });
      const controls = new ShardControls();
      const engine = make();
      await engine.warm();
      const run = engine.run({
        spec,
        shard: { index: 0, count: 1 },
        runId: randomUUID(),
        campaignId: randomUUID(),
        generatorId: 'g',
        sink: { record: () => undefined, window: () => undefined },
        signal: new AbortController().signal,
        controls,
      });
      try {
        await run.ready;
        const result = run.start();
        await new Promise((resolve) => setTimeout(resolve, 500));
        controls.gpuTelemetry({
          ...envelope(randomUUID(), randomUUID()),
          source: 'dcgm',
          url: 'http://gpu/metrics',
          scrapedAt: Date.now(),
          health: 'ok',
          samples: [
            { gpu: '0', instance: null, metric: 'fb_used_mib', value: 76_000, unit: 'MiB' },
            { gpu: '0', instance: null, metric: 'fb_total_mib', value: 80_000, unit: 'MiB' },
          ],
        });
        const trace = (await result).adaptive ?? [];
        const over = trace.filter((step) => step.reason === 'gpu-memory-over-ceiling');
        expect(over.length).toBeGreaterThan(0);
        expect(over.every((step) => step.gpuMemoryUsed === 0.95)).toBe(true);
        expect(
          trace.filter((step) => step.atMs < 400).some((s) => s.reason === 'gpu-memory-over-ceiling'),
        ).toBe(false);
      } finally {
        await engine.close();
      }
    },
    30_000,
  );
});
