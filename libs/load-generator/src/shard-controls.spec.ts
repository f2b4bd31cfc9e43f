import { envelope, type BreakerChange, type GpuTelemetry } from '@fathom/contracts';
import { ShardControls, gpuMemoryUsedFraction } from './shard-controls';

const breaker = (node: string, to: BreakerChange['to'], paths?: string[]): BreakerChange => ({
  ...envelope('c', 'r'),
  breaker: { target: 'http://t', layer: 'llm', node },
  from: to === 'open' ? 'closed' : 'open',
  to,
  reason: 'test',
  ...(paths ? { paths } : {}),
});

const gpu = (samples: { gpu: string; metric: string; value: number }[]): GpuTelemetry => ({
  ...envelope('c', 'r'),
  source: 'dcgm',
  url: 'http://t/metrics',
  scrapedAt: Date.now(),
  health: 'ok',
  samples: samples.map((s) => ({ ...s, instance: null, unit: 'MiB' })),
});

describe(ShardControls.name, () => {
  it('gates the paths of an open breaker until it half-opens or closes', () => {
    const sut = new ShardControls();
    const changes: unknown[] = [];
    sut.onChange((change) => changes.push(change));
    sut.breaker(breaker('a', 'open', ['/v1/chat/completions']));
    expect(sut.gate('/v1/chat/completions')).toBe(false);
    expect(sut.gate('/v1/embeddings')).toBe(true);
    sut.breaker(breaker('a', 'half-open'));
    expect(sut.gate('/v1/chat/completions')).toBe(true);
    sut.breaker(breaker('a', 'closed'));
    expect(changes).toEqual([
      { gate: { closedPaths: ['/v1/chat/completions'], closedAll: false } },
      { gate: { closedPaths: [], closedAll: false } },
    ]);
  });

  it('gates every path while a breaker that names none is open, and keeps the others apart', () => {
    const sut = new ShardControls();
    sut.breaker(breaker('a', 'open', ['/rag/retrieve']));
    sut.breaker(breaker('b', 'open'));
    expect(sut.gate('/v1/chat/completions')).toBe(false);
    expect(sut.gateState()).toEqual({ closedPaths: ['/rag/retrieve'], closedAll: true });
    sut.breaker(breaker('b', 'closed'));
    expect(sut.gate('/v1/chat/completions')).toBe(true);
    expect(sut.gate('/rag/retrieve')).toBe(false);
  });

  it('reads GPU memory in use from the telemetry and tells the engine', () => {
    const sut = new ShardControls();
    const changes: unknown[] = [];
    sut.onChange((change) => changes.push(change));
    sut.gpuTelemetry(gpu([{ gpu: '0', metric: 'gpu_util_pct', value: 90 }]));
    expect(sut.gpu.read()).toBeNull();
    sut.gpuTelemetry(
      gpu([
        { gpu: '0', metric: 'fb_used_mib', value: 40_000 },
        { gpu: '0', metric: 'fb_total_mib', value: 80_000 },
      ]),
    );
    expect(sut.gpu.read()).toBeCloseTo(0.5);
    expect(changes).toEqual([{ gpuMemoryUsed: 0.5 }]);
  });
});

describe(gpuMemoryUsedFraction.name, () => {
  it('takes the fullest GPU, from used/total or used/(used + free)', () => {
    expect(
      gpuMemoryUsedFraction(
        gpu([
          { gpu: '0', metric: 'fb_used_mib', value: 10_000 },
          { gpu: '0', metric: 'fb_total_mib', value: 80_000 },
          { gpu: '1', metric: 'fb_used_mib', value: 60_000 },
          { gpu: '1', metric: 'fb_free_mib', value: 20_000 },
        ]),
      ),
    ).toBeCloseTo(0.75);
  });

  it('is null without both figures for some GPU (a gap, or an inference server alone)', () => {
    expect(gpuMemoryUsedFraction(gpu([]))).toBeNull();
    expect(gpuMemoryUsedFraction(gpu([{ gpu: '0', metric: 'fb_used_mib', value: 10 }]))).toBeNull();
    expect(
      gpuMemoryUsedFraction(
        gpu([
          { gpu: '0', metric: 'fb_used_mib', value: 10 },
          { gpu: '0', metric: 'fb_total_mib', value: 0 },
        ]),
      ),
    ).toBeNull();
  });
});
