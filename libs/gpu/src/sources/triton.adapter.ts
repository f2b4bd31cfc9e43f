import { dedupeSamples, type NormalisedSample } from '../model/gpu-sample.model';
import { toRatio } from '../model/reading.util';
import { emitLatencyHistogram, emitScalar, type KeyOf, type SampleIndex } from './sample-index.util';

const BYTES_PER_MIB = 1024 * 1024;

/**
 * NVIDIA Triton Inference Server `/metrics` (names and units per Triton's docs/user_guide/
 * metrics.md; no Triton capture was available, so only the long-standing names are mapped):
 * - GPU metrics, labelled `gpu_uuid`: nv_gpu_utilization (0..1 -> gpu_util_pct),
 *   nv_gpu_memory_used_bytes / nv_gpu_memory_total_bytes (bytes -> MiB), nv_gpu_power_usage (W),
 *   nv_gpu_power_limit (W), nv_energy_consumption (J counter -> mJ). Keyed by the GPU UUID.
 * - Model metrics, labelled `model`, `version`: nv_inference_pending_request_count -> requests_waiting;
 *   nv_inference_request_success / _failure -> requests_succeeded/failed_total;
 *   nv_inference_request_duration_us / nv_inference_queue_duration_us (cumulative us) ->
 *   e2e_sum_s / queue_sum_s; nv_inference_first_response_histogram_ms (histogram, ms) -> ttft.
 *   Keyed gpu = `serverId` or `triton/<model>`, instance = `version`.
 */
export function adaptTriton(index: SampleIndex, serverId?: string): NormalisedSample[] {
  const gpuKey: KeyOf = (labels) =>
    labels['gpu_uuid'] ? { gpu: labels['gpu_uuid'], instance: null } : undefined;
  const modelKey: KeyOf = (labels) => ({
    gpu: serverId ?? `triton/${labels['model'] || 'unknown'}`,
    instance: labels['version'] !== undefined && labels['version'] !== '' ? labels['version'] : null,
  });
  const first = { mode: 'first' as const };
  return dedupeSamples([
    ...emitScalar(index, 'triton', ['nv_gpu_utilization'], 'gpu_util_pct', gpuKey, {
      mode: 'first',
      convert: (v) => {
        const r = toRatio(v);
        return r === undefined ? undefined : r * 100;
      },
    }),
    ...emitScalar(index, 'triton', ['nv_gpu_memory_used_bytes'], 'fb_used_mib', gpuKey, {
      mode: 'first',
      convert: (v) => v / BYTES_PER_MIB,
    }),
    ...emitScalar(index, 'triton', ['nv_gpu_memory_total_bytes'], 'fb_total_mib', gpuKey, {
      mode: 'first',
      convert: (v) => v / BYTES_PER_MIB,
    }),
    ...emitScalar(index, 'triton', ['nv_gpu_power_usage'], 'power_w', gpuKey, first),
    ...emitScalar(index, 'triton', ['nv_gpu_power_limit'], 'power_limit_w', gpuKey, first),
    ...emitScalar(
      index,
      'triton',
      ['nv_energy_consumption', 'nv_energy_consumption_total'],
      'energy_mj',
      gpuKey,
      {
        mode: 'first',
        convert: (joules) => joules * 1000,
      },
    ),
    ...emitScalar(index, 'triton', ['nv_inference_pending_request_count'], 'requests_waiting', modelKey, {
      mode: 'sum',
    }),
    ...emitScalar(
      index,
      'triton',
      ['nv_inference_request_success', 'nv_inference_request_success_total'],
      'requests_succeeded_total',
      modelKey,
      { mode: 'sum' },
    ),
    ...emitScalar(
      index,
      'triton',
      ['nv_inference_request_failure', 'nv_inference_request_failure_total'],
      'requests_failed_total',
      modelKey,
      { mode: 'sum' },
    ),
    ...emitScalar(index, 'triton', ['nv_inference_request_duration_us'], 'e2e_sum_s', modelKey, {
      mode: 'sum',
      convert: (us) => us / 1e6,
    }),
    ...emitScalar(index, 'triton', ['nv_inference_queue_duration_us'], 'queue_sum_s', modelKey, {
      mode: 'sum',
      convert: (us) => us / 1e6,
    }),
    ...emitLatencyHistogram(
      index,
      'triton',
      ['nv_inference_first_response_histogram_ms'],
      'ttft',
      modelKey,
      1e-3,
    ),
  ]);
}
