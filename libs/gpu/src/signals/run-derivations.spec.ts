import type { NormalisedSample } from '../model/gpu-sample.model';
import { DerivedMetrics, RunGpuDerivations } from './run-derivations';

const vllm = (hits: number, queries: number): NormalisedSample[] => [
  {
    source: 'vllm',
    gpu: 'vllm/m',
    instance: '0',
    metric: 'prefix_cache_hits_total',
    value: hits,
    unit: 'tokens',
  },
  {
    source: 'vllm',
    gpu: 'vllm/m',
    instance: '0',
    metric: 'prefix_cache_queries_total',
    value: queries,
    unit: 'tokens',
  },
];
const value = (samples: { metric: string; value: number }[], metric: string) =>
  samples.find((s) => s.metric === metric)?.value;

describe(RunGpuDerivations.name, () => {
  it('derives interval hit rates, their variance over the run, and survives a counter reset', () => {
    const sut = new RunGpuDerivations();
    expect(sut.observe(vllm(0, 0), 0)).toEqual([]);
    expect(value(sut.observe(vllm(90, 100), 1000), DerivedMetrics.kvCacheHitRatio)).toBeCloseTo(0.9);
    const second = sut.observe(vllm(100, 200), 2000); // 10 hits of 100: 0.1
    expect(value(second, DerivedMetrics.kvCacheHitRatio)).toBeCloseTo(0.1);
    expect(value(second, DerivedMetrics.kvCacheHitRatioVariance)).toBeCloseTo(0.16); // (0.9, 0.1): var 0.16
    expect(value(second, DerivedMetrics.kvCacheHitRatioVarianceUnhealthy)).toBe(1);
    const reset = sut.observe(vllm(50, 100), 3000); // server restarted: whole counts are the interval
    expect(value(reset, DerivedMetrics.kvCacheHitRatio)).toBeCloseTo(0.5);
  });

  it('marks DRAM saturation above 0.8', () => {
    const sut = new RunGpuDerivations();
    const out = sut.observe(
      [
        {
          source: 'dcgm',
          gpu: 'GPU-1',
          instance: null,
          metric: 'dram_active_ratio',
          value: 0.85,
          unit: 'ratio',
        },
      ],
      0,
    );
    expect(value(out, DerivedMetrics.memoryBandwidthSaturated)).toBe(1);
    expect(value(out, DerivedMetrics.memoryBandwidthRatio)).toBe(0.85);
  });
});
