import { dedupeSamples, type NormalisedSample } from '../model/gpu-sample.model';
import { toRatio } from '../model/reading.util';
import { emitLatencyHistogram, emitScalar, type KeyOf, type SampleIndex } from './sample-index.util';

/**
 * vLLM `/metrics` (names per vllm/v1/metrics/loggers.py and docs/usage/metrics.md, see
 * __fixtures__/vllm/vllm-metrics-catalog.json). Where a metric was renamed, the current name is
 * listed first and wins: `kv_cache_usage_perc` (a 0..1 ratio despite the name) over
 * `gpu_cache_usage_perc`; `prefix_cache_*` over `gpu_prefix_cache_*`; `inter_token_latency_seconds`
 * over `time_per_output_token_seconds` (the same histogram, renamed in 0.11).
 *
 * Key: gpu = `serverId` or `vllm/<model_name>`; instance = the V1 `engine` label (null on V0).
 * Prefix-cache counters stay per engine here; `PrefixCacheHitRateTracker` sums them.
 */
export function adaptVllm(index: SampleIndex, serverId?: string): NormalisedSample[] {
  const keyOf: KeyOf = (labels) => ({
    gpu: serverId ?? `vllm/${labels['model_name'] || 'unknown'}`,
    instance: labels['engine'] !== undefined && labels['engine'] !== '' ? labels['engine'] : null,
  });
  const first = { mode: 'first' as const };
  const sum = { mode: 'sum' as const };
  return dedupeSamples([
    ...emitScalar(
      index,
      'vllm',
      ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'],
      'kv_cache_usage_ratio',
      keyOf,
      {
        mode: 'first',
        convert: toRatio,
      },
    ),
    // V0 gauge; -1 means "prefix caching disabled", i.e. no reading.
    ...emitScalar(index, 'vllm', ['vllm:gpu_prefix_cache_hit_rate'], 'prefix_cache_hit_ratio', keyOf, {
      mode: 'first',
      convert: (v) => (v < 0 ? undefined : toRatio(v)),
    }),
    ...emitScalar(
      index,
      'vllm',
      ['vllm:prefix_cache_queries_total', 'vllm:gpu_prefix_cache_queries_total'],
      'prefix_cache_queries_total',
      keyOf,
      sum,
    ),
    ...emitScalar(
      index,
      'vllm',
      ['vllm:prefix_cache_hits_total', 'vllm:gpu_prefix_cache_hits_total'],
      'prefix_cache_hits_total',
      keyOf,
      sum,
    ),
    ...emitScalar(index, 'vllm', ['vllm:num_requests_running'], 'requests_running', keyOf, first),
    ...emitScalar(index, 'vllm', ['vllm:num_requests_waiting'], 'requests_waiting', keyOf, first),
    ...emitScalar(index, 'vllm', ['vllm:num_requests_swapped'], 'requests_swapped', keyOf, first),
    ...emitScalar(index, 'vllm', ['vllm:num_preemptions_total'], 'preemptions_total', keyOf, sum),
    ...emitScalar(index, 'vllm', ['vllm:prompt_tokens_total'], 'prompt_tokens_total', keyOf, sum),
    ...emitScalar(index, 'vllm', ['vllm:generation_tokens_total'], 'generation_tokens_total', keyOf, sum),
    // Summed over finished_reason (stop, length, abort).
    ...emitScalar(index, 'vllm', ['vllm:request_success_total'], 'requests_succeeded_total', keyOf, sum),
    ...emitLatencyHistogram(index, 'vllm', ['vllm:time_to_first_token_seconds'], 'ttft', keyOf),
    ...emitLatencyHistogram(
      index,
      'vllm',
      ['vllm:inter_token_latency_seconds', 'vllm:time_per_output_token_seconds'],
      'itl',
      keyOf,
    ),
    ...emitLatencyHistogram(index, 'vllm', ['vllm:request_time_per_output_token_seconds'], 'tpot', keyOf),
    ...emitLatencyHistogram(index, 'vllm', ['vllm:e2e_request_latency_seconds'], 'e2e', keyOf),
    ...emitLatencyHistogram(index, 'vllm', ['vllm:request_queue_time_seconds'], 'queue', keyOf),
  ]);
}
