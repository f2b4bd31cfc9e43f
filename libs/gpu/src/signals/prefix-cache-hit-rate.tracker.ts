import type { NormalisedSample } from '../model/gpu-sample.model';
import { counterDelta } from './counter-rate.util';

export interface HitRatePoint {
  /** The inference server (the sample's `gpu` for vLLM: `vllm/<model>` or the scraper's id). */
  readonly server: string;
  readonly atMs: number;
  /** Hits over queries in the interval, 0..1. */
  readonly hitRate: number;
  /** Token counts the rate was computed from (summed over engines); absent for a V0 gauge. */
  readonly hitsDelta?: number;
  readonly queriesDelta?: number;
}

interface EngineReading {
  hits: number;
  queries: number;
}

/**
 * KV-cache (prefix-cache) hit rate per server from successive scrapes: for each interval,
 * sum over engines of delta hits / sum over engines of delta queries (vLLM counts both in
 * tokens). An engine whose hits or queries went down restarted: its whole current count is the
 * interval's increase. An interval with no queries has no hit rate (nothing was asked), not 0.
 * A server that only reports the V0 gauge (`prefix_cache_hit_ratio`) gives that gauge.
 */
export class PrefixCacheHitRateTracker {
  private readonly previous = new Map<string, Map<string, EngineReading>>();

  observe(samples: readonly NormalisedSample[], atMs: number): HitRatePoint[] {
    const current = new Map<string, Map<string, Partial<EngineReading>>>();
    const gauges = new Map<string, number>();
    for (const sample of samples) {
      if (sample.metric === 'prefix_cache_hit_ratio') {
        gauges.set(sample.gpu, sample.value);
        continue;
      }
      if (sample.metric !== 'prefix_cache_hits_total' && sample.metric !== 'prefix_cache_queries_total')
        continue;
      const engines = current.get(sample.gpu) ?? new Map<string, Partial<EngineReading>>();
      current.set(sample.gpu, engines);
      const engine = sample.instance ?? '';
      const reading = engines.get(engine) ?? {};
      if (sample.metric === 'prefix_cache_hits_total') reading.hits = sample.value;
      else reading.queries = sample.value;
      engines.set(engine, reading);
    }

    const points: HitRatePoint[] = [];
    for (const [server, engines] of current) {
      const before = this.previous.get(server) ?? new Map<string, EngineReading>();
      const next = new Map<string, EngineReading>();
      let hitsDelta = 0;
      let queriesDelta = 0;
      let baselined = false;
      for (const [engine, reading] of engines) {
        if (reading.hits === undefined || reading.queries === undefined) continue;
        const now = { hits: reading.hits, queries: reading.queries };
        next.set(engine, now);
        const was = before.get(engine);
        if (!was) continue; // first sight of this engine: no baseline yet
        baselined = true;
        const restarted = now.hits < was.hits || now.queries < was.queries;
        hitsDelta += restarted ? now.hits : counterDelta(was.hits, now.hits);
        queriesDelta += restarted ? now.queries : counterDelta(was.queries, now.queries);
      }
      this.previous.set(server, next);
      if (baselined && queriesDelta > 0) {
        points.push({
          server,
          atMs,
          hitRate: Math.min(1, hitsDelta / queriesDelta),
          hitsDelta,
          queriesDelta,
        });
      }
    }
    for (const [server, ratio] of gauges) {
      if (!current.has(server)) points.push({ server, atMs, hitRate: ratio });
    }
    return points;
  }
}
