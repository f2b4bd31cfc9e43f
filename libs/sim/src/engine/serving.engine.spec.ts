import { resolveSimConfig, type SimConfig } from '../config/sim-config';
import { VirtualClock } from './clock';
import { ServingEngine, type SequenceTiming } from './serving.engine';

interface Finished {
  timing: SequenceTiming;
  tokenTimes: number[];
}

function engineWith(overrides: Partial<SimConfig['engine']> = {}): {
  engine: ServingEngine;
  clock: VirtualClock;
} {
  const clock = new VirtualClock();
  const config = resolveSimConfig({ engine: overrides }).engine;
  return { engine: new ServingEngine(config, clock), clock };
}

function ids(length: number, salt: number): Uint32Array {
  return Uint32Array.from({ length }, (_, i) => (salt * 100003 + i) >>> 0);
}

function submit(engine: ServingEngine, promptIds: Uint32Array, outputTokens: number, sink: Finished[]): void {
  const tokenTimes: number[] = [];
  engine.submit({
    promptIds,
    outputTokens,
    onToken: (_i, at) => tokenTimes.push(at),
    onFinish: (timing) => sink.push({ timing, tokenTimes }),
  });
}

const ttft = (f: Finished): number => f.timing.firstTokenMs! - f.timing.arrivalMs;
const tpot = (f: Finished): number => (f.timing.finishMs - f.timing.firstTokenMs!) / (f.timing.generated - 1);

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)];
}

/** Closed loop: `clients` users, each sending the next request when the last finishes. */
function closedLoop(
  clients: number,
  durationMs: number,
  overrides: Partial<SimConfig['engine']> = {},
): Finished[] {
  const { engine, clock } = engineWith(overrides);
  const done: Finished[] = [];
  let salt = 0;
  const user = (): void => {
    if (clock.now() >= durationMs) return;
    const tokenTimes: number[] = [];
    engine.submit({
      promptIds: ids(256, ++salt),
      outputTokens: 64,
      onToken: (_i, at) => tokenTimes.push(at),
      onFinish: (timing) => {
        done.push({ timing, tokenTimes });
        user();
      },
    });
  };
  for (let c = 0; c < clients; c++) user();
  clock.run();
  // Drop the first wave (cold start) so the figures describe steady state.
  return done.filter((f) => f.timing.arrivalMs > 2000);
}

describe(ServingEngine.name, () => {
  it('gives a longer TTFT to a longer prompt (prefill grows with uncached tokens)', () => {
    const results = [64, 1024, 4096].map((length) => {
      const { engine, clock } = engineWith();
      const done: Finished[] = [];
      submit(engine, ids(length, length), 8, done);
      clock.run();
      return ttft(done[0]);
    });
    expect(results[1]).toBeGreaterThan(results[0] + 20);
    expect(results[2]).toBeGreaterThan(results[1] + 60);
  });

  it('gives a longer time per output token to a bigger batch', () => {
    const tpotAt = (batch: number): number => {
      const { engine, clock } = engineWith();
      const done: Finished[] = [];
      for (let i = 0; i < batch; i++) submit(engine, ids(32, i), 64, done);
      clock.run();
      return done.reduce((sum, f) => sum + tpot(f), 0) / done.length;
    };
    const [one, eight, thirtyTwo] = [1, 8, 32].map(tpotAt);
    expect(one).toBeGreaterThan(9);
    expect(one).toBeLessThan(12);
    expect(eight).toBeGreaterThan(one);
    expect(thirtyTwo).toBeGreaterThan(eight + 3);
  });

  it('raises the prefix-cache hit rate when prompts share a prefix', () => {
    const hitRate = (sharedPrefix: number): number => {
      const { engine, clock } = engineWith();
      const done: Finished[] = [];
      const prefix = ids(sharedPrefix, 999);
      for (let i = 0; i < 20; i++) {
        const prompt = new Uint32Array(512);
        prompt.set(prefix);
        prompt.set(ids(512 - sharedPrefix, i + 1), sharedPrefix);
        submit(engine, prompt, 4, done);
        clock.run();
      }
      const s = engine.snapshot();
      return s.prefixHitTokens / s.prefixQueriedTokens;
    };
    const none = hitRate(0);
    const half = hitRate(256);
    const most = hitRate(480);
    expect(none).toBe(0);
    expect(half).toBeGreaterThan(0.4);
    expect(most).toBeGreaterThan(half + 0.3);
  });

  it('reports the cached prompt tokens of each request', () => {
    const { engine, clock } = engineWith();
    const done: Finished[] = [];
    submit(engine, ids(100, 1), 4, done);
    clock.run();
    submit(engine, ids(100, 1), 4, done);
    clock.run();
    expect(done[0].timing.cachedPromptTokens).toBe(0);
    expect(done[1].timing.cachedPromptTokens).toBe(96); // 6 full blocks of 16
  });

  it('preempts only when the running sequences outgrow the KV cache', () => {
    const preemptions = (numBlocks: number): number => {
      const { engine, clock } = engineWith({ numBlocks, enablePrefixCaching: false });
      const done: Finished[] = [];
      for (let i = 0; i < 32; i++) submit(engine, ids(200, i), 128, done);
      clock.run();
      expect(done).toHaveLength(32);
      expect(done.every((f) => f.timing.generated === 128)).toBe(true);
      return engine.snapshot().preemptions;
    };
    // 32 x (200 + 128) tokens = 32 x 21 blocks = 672 blocks needed at the peak.
    expect(preemptions(4096)).toBe(0);
    expect(preemptions(700)).toBe(0);
    expect(preemptions(500)).toBeGreaterThan(0);
  });

  it('keeps P99 TTFT flat up to the batch limit and climbs past the knee', () => {
    const p99At = (clients: number): number => p99(closedLoop(clients, 12000).map(ttft));
    const [p8, p16, p32, p48, p64] = [8, 16, 32, 48, 64].map(p99At);
    expect(p16).toBeLessThan(p8 * 1.5);
    expect(p32).toBeLessThan(p8 * 2);
    expect(p48).toBeGreaterThan(p32 * 3);
    expect(p64).toBeGreaterThan(p48);
  });

  it('adds the latency_spike extra to every step', () => {
    const clock = new VirtualClock();
    let extra = 0;
    const engine = new ServingEngine(resolveSimConfig({}).engine, clock, () => extra);
    const done: Finished[] = [];
    submit(engine, ids(32, 1), 16, done);
    clock.run();
    extra = 100;
    submit(engine, ids(32, 2), 16, done);
    clock.run();
    expect(tpot(done[1]) - tpot(done[0])).toBeCloseTo(100, 0);
  });
});
