import fc from 'fast-check';
import type { NormalisedSample } from '../model/gpu-sample.model';
import { parseGpuText } from '../parse/gpu-text.parser';
import { memoryBandwidthSaturation } from './bandwidth-saturation';
import { counterDelta, CounterRateTracker } from './counter-rate.util';
import { PrefixCacheHitRateTracker } from './prefix-cache-hit-rate.tracker';
import { smUtilisationHeatMap } from './sm-heat-map';
import { KV_HIT_RATE_VARIANCE_HEALTHY_BELOW, SlidingWindowVariance, variance } from './windowed-variance';

function vllmScrape(engines: Record<string, [hits: number, queries: number]>): NormalisedSample[] {
  const lines = Object.entries(engines).flatMap(([engine, [hits, queries]]) => [
    `vllm:prefix_cache_hits_total{model_name="m",engine="${engine}"} ${hits}`,
    `vllm:prefix_cache_queries_total{engine="${engine}",model_name="m"} ${queries}`,
  ]);
  return parseGpuText(lines.join('\n'));
}

describe(counterDelta.name, () => {
  it('treats a drop as a restart from zero', () => {
    expect(counterDelta(100, 130)).toBe(30);
    expect(counterDelta(100, 7)).toBe(7);
  });

  it('never goes negative (property)', () => {
    fc.assert(fc.property(fc.nat(), fc.nat(), (a, b) => counterDelta(a, b) >= 0));
  });
});

describe(CounterRateTracker.name, () => {
  it('gives per-second rates and survives a reset', () => {
    const sut = new CounterRateTracker();
    expect(sut.observe('k', 100, 0)).toBeUndefined();
    expect(sut.observe('k', 150, 10_000)).toBe(5);
    expect(sut.observe('k', 20, 20_000)).toBe(2);
    expect(sut.observe('k', 20, 20_000)).toBeUndefined();
  });
});

describe(PrefixCacheHitRateTracker.name, () => {
  it('sums deltas over engines before dividing', () => {
    const sut = new PrefixCacheHitRateTracker();
    expect(sut.observe(vllmScrape({ '0': [0, 0], '1': [0, 0] }), 0)).toEqual([]);
    // engine 0: 90/100 hits, engine 1: 10/300 -> 100/400 = 0.25 (not the mean of 0.9 and 0.033)
    const [point] = sut.observe(vllmScrape({ '0': [90, 100], '1': [10, 300] }), 15_000);
    expect(point).toEqual({
      server: 'vllm/m',
      atMs: 15_000,
      hitRate: 0.25,
      hitsDelta: 100,
      queriesDelta: 400,
    });
  });

  it('handles an engine restart (counters reset) without a negative or >1 rate', () => {
    const sut = new PrefixCacheHitRateTracker();
    sut.observe(vllmScrape({ '0': [500, 1000], '1': [100, 200] }), 0);
    const [point] = sut.observe(vllmScrape({ '0': [30, 60], '1': [150, 300] }), 15_000);
    // engine 0 restarted: its increase is 30/60; engine 1: 50/100 -> 80/160
    expect(point.hitRate).toBeCloseTo(0.5);
    expect(point.queriesDelta).toBe(160);
  });

  it('gives no point for an idle interval, and uses the V0 gauge where that is all there is', () => {
    const sut = new PrefixCacheHitRateTracker();
    sut.observe(vllmScrape({ '0': [10, 20] }), 0);
    expect(sut.observe(vllmScrape({ '0': [10, 20] }), 15_000)).toEqual([]);
    const v0 = parseGpuText('vllm:gpu_prefix_cache_hit_rate{model_name="old"} 0.4');
    expect(sut.observe(v0, 30_000)).toEqual([{ server: 'vllm/old', atMs: 30_000, hitRate: 0.4 }]);
  });
});

describe(SlidingWindowVariance.name, () => {
  it('is healthy for a steady hit rate and unhealthy for a swinging one (threshold 0.08)', () => {
    const steady = new SlidingWindowVariance({ maxPoints: 10 });
    const swinging = new SlidingWindowVariance({ maxPoints: 10 });
    for (let i = 0; i < 10; i++) {
      steady.add(0.7 + (i % 2) * 0.02, i * 1000);
      swinging.add(i % 2 ? 0.95 : 0.1, i * 1000);
    }
    expect(steady.isHealthy()).toBe(true);
    expect(swinging.variance()).toBeCloseTo(0.180625);
    expect(swinging.isHealthy()).toBe(false);
    expect(KV_HIT_RATE_VARIANCE_HEALTHY_BELOW).toBe(0.08);
  });

  it('forgets points older than the time window', () => {
    const sut = new SlidingWindowVariance({ windowMs: 10_000 });
    sut.add(0, 0);
    sut.add(1, 1000);
    sut.add(0.5, 20_000);
    sut.add(0.5, 21_000);
    expect(sut.size).toBe(2);
    expect(sut.variance()).toBe(0);
  });

  it('matches the batch variance (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 2, maxLength: 40 }),
        (values) => {
          const sut = new SlidingWindowVariance({ maxPoints: 1000 });
          values.forEach((v, i) => sut.add(v, i));
          expect(sut.variance()).toBeCloseTo(variance(values) as number, 10);
        },
      ),
    );
  });
});

describe(memoryBandwidthSaturation.name, () => {
  it('uses DRAM activity when profiled, and falls back to memory-copy utilisation', () => {
    const samples = parseGpuText(
      [
        'DCGM_FI_PROF_DRAM_ACTIVE{UUID="GPU-a",gpu="0"} 0.91',
        'DCGM_FI_DEV_MEM_COPY_UTIL{UUID="GPU-a",gpu="0"} 10',
        'DCGM_FI_DEV_MEM_COPY_UTIL{UUID="GPU-b",gpu="1"} 85',
        'DCGM_FI_PROF_DRAM_ACTIVE{UUID="GPU-c",gpu="2"} 0.35',
      ].join('\n'),
    );
    expect(memoryBandwidthSaturation(samples).map((v) => [v.gpu, v.basis, v.saturated])).toEqual([
      ['GPU-a', 'dram_active', true],
      ['GPU-b', 'mem_copy_util', true],
      ['GPU-c', 'dram_active', false],
    ]);
    expect(memoryBandwidthSaturation(samples, 0.95).every((v) => !v.saturated)).toBe(true);
  });
});

describe(smUtilisationHeatMap.name, () => {
  it('buckets SM activity per GPU over time, with gaps as null and GPU_UTIL as fallback', () => {
    const at = (atMs: number, text: string) => ({ atMs, samples: parseGpuText(text) });
    const sut = smUtilisationHeatMap(
      [
        at(
          0,
          'DCGM_FI_PROF_SM_ACTIVE{UUID="GPU-a"} 0.2\nDCGM_FI_DEV_GPU_UTIL{UUID="GPU-a"} 100\nDCGM_FI_DEV_GPU_UTIL{UUID="GPU-b"} 50',
        ),
        at(4000, 'DCGM_FI_PROF_SM_ACTIVE{UUID="GPU-a"} 0.4'),
        at(12_000, 'DCGM_FI_PROF_SM_ACTIVE{UUID="GPU-a"} 0.9\nDCGM_FI_DEV_GPU_UTIL{UUID="GPU-b"} 100'),
      ],
      5000,
    );
    expect(sut.rows).toEqual(['GPU-a', 'GPU-b']);
    expect(sut.bucketStartsMs).toEqual([0, 5000, 10_000]);
    expect(sut.basis).toEqual(['sm_active', 'gpu_util']);
    expect(sut.cells[0][0]).toBeCloseTo(0.3);
    expect(sut.cells[0][1]).toBeNull();
    expect(sut.cells[0][2]).toBeCloseTo(0.9);
    expect(sut.cells[1]).toEqual([0.5, null, 1]);
  });
});
