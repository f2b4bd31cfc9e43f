import type { GpuSample } from '@fathom/contracts';
import type { NormalisedSample } from '../model/gpu-sample.model';
import { memoryBandwidthSaturation, DEFAULT_BANDWIDTH_SATURATION_THRESHOLD } from './bandwidth-saturation';
import { PrefixCacheHitRateTracker } from './prefix-cache-hit-rate.tracker';
import { KV_HIT_RATE_VARIANCE_HEALTHY_BELOW, SlidingWindowVariance } from './windowed-variance';

/** Names of the derived metrics the collector publishes beside the scraped ones. */
export const DerivedMetrics = {
  /** KV-cache (prefix-cache) hit rate over the last scrape interval, from counter deltas. */
  kvCacheHitRatio: 'kv_cache_hit_ratio',
  /** Population variance of the interval hit rates since the run began (spec: healthy < 0.08). */
  kvCacheHitRatioVariance: 'kv_cache_hit_ratio_variance',
  /** Same over the last 30 intervals. */
  kvCacheHitRatioWindowVariance: 'kv_cache_hit_ratio_window_variance',
  /** 1 when the variance since the run began is at or above 0.08, else 0. */
  kvCacheHitRatioVarianceUnhealthy: 'kv_cache_hit_ratio_variance_unhealthy',
  /** DRAM activity (or memory-copy utilisation without profiling metrics), 0..1. */
  memoryBandwidthRatio: 'memory_bandwidth_ratio',
  /** 1 when memory_bandwidth_ratio is above the saturation threshold (0.8), else 0. */
  memoryBandwidthSaturated: 'memory_bandwidth_saturated',
} as const;

/** Welford's running mean/variance: O(1) per point, no history kept. */
class RunningVariance {
  private n = 0;
  private mean = 0;
  private m2 = 0;
  add(x: number): void {
    this.n++;
    const d = x - this.mean;
    this.mean += d / this.n;
    this.m2 += d * (x - this.mean);
  }
  get count(): number {
    return this.n;
  }
  /** Population variance; undefined under two points (as `variance`). */
  variance(): number | undefined {
    return this.n < 2 ? undefined : this.m2 / this.n;
  }
}

/**
 * The derived GPU signals of one run, fed scrape by scrape: KV-cache hit rate per server and its
 * variance (over the whole run and over a sliding window), memory-bandwidth saturation per GPU.
 * Returns them as samples in the telemetry's own shape, so they travel and are stored with the
 * scrape that produced them (and a run summary's "last value per metric" shows the run's
 * hit-rate variance). One instance per (run, source); single owner.
 */
export class RunGpuDerivations {
  private readonly hitRates = new PrefixCacheHitRateTracker();
  private readonly runVariance = new Map<string, RunningVariance>();
  private readonly windowVariance = new Map<string, SlidingWindowVariance>();

  constructor(private readonly saturationThreshold = DEFAULT_BANDWIDTH_SATURATION_THRESHOLD) {}

  observe(samples: readonly NormalisedSample[], atMs: number): GpuSample[] {
    const out: GpuSample[] = [];
    for (const point of this.hitRates.observe(samples, atMs)) {
      const run = this.runVariance.get(point.server) ?? new RunningVariance();
      this.runVariance.set(point.server, run);
      const window = this.windowVariance.get(point.server) ?? new SlidingWindowVariance({ maxPoints: 30 });
      this.windowVariance.set(point.server, window);
      run.add(point.hitRate);
      window.add(point.hitRate, atMs);
      const gpu = point.server;
      out.push({
        gpu,
        instance: null,
        metric: DerivedMetrics.kvCacheHitRatio,
        value: point.hitRate,
        unit: 'ratio',
      });
      const v = run.variance();
      if (v !== undefined) {
        out.push({
          gpu,
          instance: null,
          metric: DerivedMetrics.kvCacheHitRatioVariance,
          value: v,
          unit: 'ratio^2',
        });
        out.push({
          gpu,
          instance: null,
          metric: DerivedMetrics.kvCacheHitRatioVarianceUnhealthy,
          value: v >= KV_HIT_RATE_VARIANCE_HEALTHY_BELOW ? 1 : 0,
          unit: 'bool',
        });
      }
      const w = window.variance();
      if (w !== undefined)
        out.push({
          gpu,
          instance: null,
          metric: DerivedMetrics.kvCacheHitRatioWindowVariance,
          value: w,
          unit: 'ratio^2',
        });
    }
    for (const s of memoryBandwidthSaturation(samples, this.saturationThreshold)) {
      out.push({
        gpu: s.gpu,
        instance: s.instance,
        metric: DerivedMetrics.memoryBandwidthRatio,
        value: s.utilisation,
        unit: 'ratio',
      });
      out.push({
        gpu: s.gpu,
        instance: s.instance,
        metric: DerivedMetrics.memoryBandwidthSaturated,
        value: s.saturated ? 1 : 0,
        unit: 'bool',
      });
    }
    return out;
  }
}
