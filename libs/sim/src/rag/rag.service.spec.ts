import { resolveSimConfig } from '../config/sim-config';
import { FaultController } from '../faults/fault.controller';
import { RagService } from './rag.service';

/**
 * The retrieve cost model on its own, in virtual time (jest's fake clock drives the service's
 * timers and Date.now), so the figure is the model's and does not depend on the machine: 16
 * closed-loop users, top-100, the default index (10,000 x 64), default seed.
 */
describe(RagService.name, () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('puts the default 16-concurrency top-100 retrieve P99 near the 145 ms budget', async () => {
    const config = resolveSimConfig({});
    const sut = new RagService(config.rag, config.seed, 1, new FaultController());
    expect(sut.size).toBe(10000);
    const latencies: number[] = [];
    const query = Float32Array.from({ length: 64 }, (_, d) => Math.sin(d + 1));
    const endAt = Date.now() + 3000;
    const user = async (): Promise<void> => {
      while (Date.now() < endAt) {
        const started = Date.now();
        const { hits } = await sut.searchIn(sut.index, query, 100);
        expect(hits).toHaveLength(100);
        latencies.push(Date.now() - started);
      }
    };
    const users = Promise.all(Array.from({ length: 16 }, user));
    await jest.advanceTimersByTimeAsync(4000);
    await users;
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)];
    // Spec: retrieve P99 budget 145 ms. The model alone (no HTTP, no CPU contention) gives P99 127 ms
    // (p50 89 ms) with the default seed; HTTP and the real scan add ~20-50 ms on this machine.
    expect(latencies.length).toBeGreaterThan(400);
    expect(p99).toBeGreaterThan(115);
    expect(p99).toBeLessThan(160);
  });
});
