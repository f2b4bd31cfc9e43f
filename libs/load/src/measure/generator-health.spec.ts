import { getHeapStatistics } from 'node:v8';
import { GeneratorHealthMonitor } from './generator-health';

const heapUsedMb = () => getHeapStatistics().used_heap_size / 2 ** 20;

describe(GeneratorHealthMonitor.name, () => {
  it('reports the V8 heap in use on its own thread, what the thread keeps included', () => {
    const sut = new GeneratorHealthMonitor(4);
    try {
      // ~56 MB of small objects kept on this thread (1 M of 48 bytes, and the array).
      const kept = Array.from({ length: 1_000_000 }, (_, i) => ({ a: i, b: i, c: i, d: i }));

      const from = heapUsedMb();
      const reported = sut.sample(0, 1000, 0).heapUsedMb;
      const to = heapUsedMb();

      expect(reported).toBeGreaterThan(50);
      // A collection in between can only lower it.
      expect(reported).toBeLessThanOrEqual(Math.max(from, to) + 1);
      expect(kept).toHaveLength(1_000_000);
    } finally {
      sut.close();
    }
  });
});
