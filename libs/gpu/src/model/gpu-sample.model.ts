import type { GpuSample } from '@fathom/contracts';

/** Where a normalised sample was read from. */
export type GpuSourceKind = 'dcgm' | 'nvidia-smi-csv' | 'nvidia-smi-xml' | 'vllm' | 'tgi' | 'triton';

/**
 * One reading in the normalised model: the contracts' `GpuSample` plus the source it came from.
 *
 * Keys:
 * - GPU sources (DCGM, nvidia-smi, Triton's `nv_gpu_*`): `gpu` is the GPU UUID, else its index
 *   (prefixed `host/` when the exposition names the host); `instance` is the MIG GPU-instance id
 *   (DCGM `GPU_I_ID`, nvidia-smi XML `gpu_instance_id`), `null` for the whole GPU.
 * - Inference servers (vLLM, TGI, Triton model metrics): `gpu` is the server identity
 *   (`vllm/<model_name>`, `tgi`, `triton/<model>`; a scraper may pass its own `serverId`), and
 *   `instance` is the server's sub-unit: vLLM's `engine` label (data-parallel engine), Triton's
 *   model `version`; `null` when the exposition has none.
 *
 * A value that the source marks as missing (`[N/A]`, `[Not Supported]`, DCGM's blank
 * sentinels, vLLM's -1 hit rate) produces no sample: missing is never a number.
 */
export interface NormalisedSample extends GpuSample {
  readonly source: GpuSourceKind;
}

export type MetricKind = 'gauge' | 'counter';

export interface CanonicalMetricInfo {
  readonly unit: string;
  readonly kind: MetricKind;
  readonly description: string;
}

const LATENCY_KINDS = {
  ttft: 'time to first token (vLLM: includes queueing)',
  itl: 'inter-token latency (vLLM time_per_output_token_seconds before 0.11)',
  tpot: 'per-request mean time per output token',
  e2e: 'end-to-end request latency',
  queue: 'time spent waiting in the queue',
} as const;
export type LatencyKind = keyof typeof LATENCY_KINDS;

/** Quantiles the adapters estimate from cumulative latency histograms (since server start). */
export const LATENCY_QUANTILES = [0.5, 0.9, 0.99] as const;

export type LatencyMetric =
  `${LatencyKind}_sum_s` | `${LatencyKind}_count_total` | `${LatencyKind}_p${50 | 90 | 99}_s`;

function latencyMetrics(): Record<LatencyMetric, CanonicalMetricInfo> {
  const out: Record<string, CanonicalMetricInfo> = {};
  for (const [kind, what] of Object.entries(LATENCY_KINDS)) {
    out[`${kind}_sum_s`] = { unit: 's', kind: 'counter', description: `sum of observed ${what}` };
    out[`${kind}_count_total`] = { unit: 'count', kind: 'counter', description: `observations of ${what}` };
    for (const q of LATENCY_QUANTILES) {
      out[`${kind}_p${Math.round(q * 100)}_s`] = {
        unit: 's',
        kind: 'gauge',
        description: `${what}, q${q} estimated from the cumulative histogram since server start`,
      };
    }
  }
  return out as Record<LatencyMetric, CanonicalMetricInfo>;
}

/** Every metric name a sample can carry, with its unit. Units are part of the name. */
export const CANONICAL_METRICS = {
  gpu_util_pct: {
    unit: '%',
    kind: 'gauge',
    description: 'GPU busy time (any kernel running); not reported for MIG instances, where DCGM reads 0',
  },
  mem_copy_util_pct: {
    unit: '%',
    kind: 'gauge',
    description: 'memory-controller busy time (not memory fullness)',
  },
  enc_util_pct: { unit: '%', kind: 'gauge', description: 'video encoder utilisation' },
  dec_util_pct: { unit: '%', kind: 'gauge', description: 'video decoder utilisation' },
  fb_used_mib: { unit: 'MiB', kind: 'gauge', description: 'framebuffer memory used' },
  fb_free_mib: { unit: 'MiB', kind: 'gauge', description: 'framebuffer memory free' },
  fb_total_mib: { unit: 'MiB', kind: 'gauge', description: 'framebuffer memory total' },
  fb_reserved_mib: { unit: 'MiB', kind: 'gauge', description: 'framebuffer memory reserved by the driver' },
  power_w: { unit: 'W', kind: 'gauge', description: 'board power draw (averaged where the source averages)' },
  power_instant_w: { unit: 'W', kind: 'gauge', description: 'instantaneous board power draw' },
  power_limit_w: { unit: 'W', kind: 'gauge', description: 'enforced power limit' },
  energy_mj: { unit: 'mJ', kind: 'counter', description: 'energy consumed since driver load' },
  temperature_c: { unit: 'C', kind: 'gauge', description: 'GPU core temperature' },
  mem_temperature_c: { unit: 'C', kind: 'gauge', description: 'memory (HBM) temperature' },
  sm_clock_mhz: { unit: 'MHz', kind: 'gauge', description: 'SM clock' },
  mem_clock_mhz: { unit: 'MHz', kind: 'gauge', description: 'memory clock' },
  fan_speed_pct: { unit: '%', kind: 'gauge', description: 'fan speed' },
  sm_active_ratio: {
    unit: 'ratio',
    kind: 'gauge',
    description: 'fraction of cycles an SM has at least one warp (DCGM profiling)',
  },
  sm_occupancy_ratio: {
    unit: 'ratio',
    kind: 'gauge',
    description: 'warps resident per SM over the maximum (DCGM profiling)',
  },
  dram_active_ratio: {
    unit: 'ratio',
    kind: 'gauge',
    description: 'fraction of cycles the device memory interface is busy (DCGM profiling)',
  },
  tensor_active_ratio: {
    unit: 'ratio',
    kind: 'gauge',
    description: 'fraction of cycles the tensor pipe is busy (DCGM profiling)',
  },
  gr_engine_active_ratio: {
    unit: 'ratio',
    kind: 'gauge',
    description: 'fraction of time the graphics/compute engine is busy (DCGM profiling)',
  },
  pcie_tx_bytes_per_s: { unit: 'B/s', kind: 'gauge', description: 'PCIe transmit rate' },
  pcie_rx_bytes_per_s: { unit: 'B/s', kind: 'gauge', description: 'PCIe receive rate' },
  pcie_replay_total: { unit: 'count', kind: 'counter', description: 'PCIe retries' },
  xid_last: { unit: 'code', kind: 'gauge', description: 'last XID error code' },
  kv_cache_usage_ratio: { unit: 'ratio', kind: 'gauge', description: 'KV-cache blocks in use (vLLM, 0..1)' },
  prefix_cache_hit_ratio: {
    unit: 'ratio',
    kind: 'gauge',
    description: 'prefix-cache hit rate as reported by the server (vLLM V0 gauge)',
  },
  prefix_cache_queries_total: { unit: 'tokens', kind: 'counter', description: 'prefix-cache queried tokens' },
  prefix_cache_hits_total: { unit: 'tokens', kind: 'counter', description: 'prefix-cache hit tokens' },
  requests_running: { unit: 'requests', kind: 'gauge', description: 'requests in the running batch' },
  requests_waiting: { unit: 'requests', kind: 'gauge', description: 'requests queued' },
  requests_swapped: { unit: 'requests', kind: 'gauge', description: 'requests swapped to CPU (vLLM V0)' },
  requests_succeeded_total: {
    unit: 'requests',
    kind: 'counter',
    description: 'requests finished successfully (all finish reasons)',
  },
  requests_failed_total: { unit: 'requests', kind: 'counter', description: 'requests that failed' },
  preemptions_total: { unit: 'count', kind: 'counter', description: 'scheduler preemptions' },
  prompt_tokens_total: { unit: 'tokens', kind: 'counter', description: 'prefill tokens processed' },
  generation_tokens_total: { unit: 'tokens', kind: 'counter', description: 'tokens generated' },
  ...latencyMetrics(),
} as const satisfies Record<string, CanonicalMetricInfo>;

export type CanonicalMetric = keyof typeof CANONICAL_METRICS;

export function isCanonicalMetric(name: string): name is CanonicalMetric {
  return Object.prototype.hasOwnProperty.call(CANONICAL_METRICS, name);
}

export function unitOf(metric: CanonicalMetric): string {
  return CANONICAL_METRICS[metric].unit;
}

/** Builds a sample with the catalogue's unit, or nothing when the value is missing/not finite. */
export function makeSample(
  source: GpuSourceKind,
  gpu: string,
  instance: string | null,
  metric: CanonicalMetric,
  value: number | undefined,
): NormalisedSample | undefined {
  if (value === undefined || !Number.isFinite(value)) return undefined;
  return { source, gpu, instance, metric, value, unit: unitOf(metric) };
}

/** Keeps the first sample per (source, gpu, instance, metric): adapters list preferred names first. */
export function dedupeSamples(samples: readonly NormalisedSample[]): NormalisedSample[] {
  const seen = new Set<string>();
  const out: NormalisedSample[] = [];
  for (const sample of samples) {
    const key = `${sample.source}\u0000${sample.gpu}\u0000${sample.instance ?? ''}\u0000${sample.metric}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(sample);
  }
  return out;
}
