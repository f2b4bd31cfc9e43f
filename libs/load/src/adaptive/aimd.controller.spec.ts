import { AimdController } from './aimd.controller';

const settings = {
  p95BudgetMs: 100,
  gpuMemoryCeiling: 0.9,
  initialConcurrency: 4,
  minConcurrency: 1,
  maxConcurrency: 10,
  increaseStep: 1,
  decreaseFactor: 0.5,
};

describe(AimdController.name, () => {
  it('adds one user per interval under budget, up to the maximum', () => {
    const sut = new AimdController(settings);
    for (let i = 0; i < 10; i++) sut.update(50, 0.5);
    expect(sut.current.concurrency).toBe(10);
  });

  it('halves concurrency when P95 goes over budget, not below the minimum', () => {
    const sut = new AimdController(settings);
    expect(sut.update(150, null)).toMatchObject({ concurrency: 2, reason: 'latency-over-budget' });
    sut.update(150, null);
    expect(sut.update(150, null).concurrency).toBe(1);
  });

  it('backs off and shrinks the input-length mix when GPU memory is over the ceiling', () => {
    const sut = new AimdController(settings);
    expect(sut.update(10, 0.95)).toMatchObject({
      concurrency: 2,
      inputScale: 0.5,
      reason: 'gpu-memory-over-ceiling',
    });
    expect(sut.update(10, 0.5).inputScale).toBeCloseTo(0.6);
  });

  it('holds without samples', () => {
    const sut = new AimdController(settings);
    expect(sut.update(null, null)).toMatchObject({ concurrency: 4, reason: 'hold' });
  });

  it('saws just under a knee in a simulated server whose P95 doubles past 8 users', () => {
    const sut = new AimdController({
      ...settings,
      initialConcurrency: 1,
      maxConcurrency: 64,
      decreaseFactor: 0.7,
    });
    const seen: number[] = [];
    for (let i = 0; i < 200; i++) {
      const c = sut.current.concurrency;
      sut.update(c <= 8 ? 80 : 160, null);
      if (i >= 100) seen.push(sut.current.concurrency);
    }
    expect(Math.max(...seen)).toBe(9);
    expect(Math.min(...seen)).toBe(6);
  });
});
