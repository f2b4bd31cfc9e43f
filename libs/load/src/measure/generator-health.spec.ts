import { GeneratorHealthMonitor } from './generator-health';

describe(GeneratorHealthMonitor.name, () => {
  it('reports the V8 heap in use on its own thread, which grows with what the thread keeps', () => {
    const sut = new GeneratorHealthMonitor(4);
    try {
      const before = sut.sample(0, 1000, 0).heapUsedMb!;
      // ~48 MB of small objects kept on this thread (8 M fields of 8 bytes, and their headers).
      const kept = Array.from({ length: 1_000_000 }, (_, i) => ({ a: i, b: i, c: i, d: i }));

      const after = sut.sample(0, 1000, 0).heapUsedMb!;

      expect(before).toBeGreaterThan(0);
      expect(after - before).toBeGreaterThan(30);
      expect(kept).toHaveLength(1_000_000);
    } finally {
      sut.close();
    }
  });
});
