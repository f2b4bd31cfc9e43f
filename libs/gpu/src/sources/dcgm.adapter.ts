import {
  dedupeSamples,
  makeSample,
  type CanonicalMetric,
  type NormalisedSample,
} from '../model/gpu-sample.model';
import { isDcgmSentinel, toRatio } from '../model/reading.util';
import type { SampleIndex, SeriesKey } from './sample-index.util';

interface DcgmField {
  readonly metric: CanonicalMetric;
  readonly convert?: (value: number) => number | undefined;
}

const ratio: DcgmField['convert'] = toRatio;

/**
 * dcgm-exporter field -> canonical metric. Units per dcgm-exporter's etc/*.csv help strings
 * (copied in __fixtures__/dcgm): *_UTIL integer %, FB_* MiB, POWER_USAGE W,
 * TOTAL_ENERGY_CONSUMPTION mJ counter, *_CLOCK MHz, *_TEMP C, DCGM_FI_PROF_* 0..1 ratios,
 * PROF_PCIE_*_BYTES bytes/s.
 */
const CURRENT_FIELDS: Readonly<Record<string, DcgmField>> = {
  DCGM_FI_DEV_GPU_UTIL: { metric: 'gpu_util_pct' },
  DCGM_FI_DEV_MEM_COPY_UTIL: { metric: 'mem_copy_util_pct' },
  DCGM_FI_DEV_ENC_UTIL: { metric: 'enc_util_pct' },
  DCGM_FI_DEV_DEC_UTIL: { metric: 'dec_util_pct' },
  DCGM_FI_DEV_FB_USED: { metric: 'fb_used_mib' },
  DCGM_FI_DEV_FB_FREE: { metric: 'fb_free_mib' },
  DCGM_FI_DEV_FB_TOTAL: { metric: 'fb_total_mib' },
  DCGM_FI_DEV_FB_RESERVED: { metric: 'fb_reserved_mib' },
  DCGM_FI_DEV_POWER_USAGE: { metric: 'power_w' },
  DCGM_FI_DEV_POWER_USAGE_INSTANT: { metric: 'power_instant_w' },
  DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION: { metric: 'energy_mj' },
  DCGM_FI_DEV_GPU_TEMP: { metric: 'temperature_c' },
  DCGM_FI_DEV_MEMORY_TEMP: { metric: 'mem_temperature_c' },
  DCGM_FI_DEV_SM_CLOCK: { metric: 'sm_clock_mhz' },
  DCGM_FI_DEV_MEM_CLOCK: { metric: 'mem_clock_mhz' },
  DCGM_FI_DEV_PCIE_REPLAY_COUNTER: { metric: 'pcie_replay_total' },
  DCGM_FI_DEV_XID_ERRORS: { metric: 'xid_last' },
  DCGM_FI_PROF_SM_ACTIVE: { metric: 'sm_active_ratio', convert: ratio },
  DCGM_FI_PROF_SM_OCCUPANCY: { metric: 'sm_occupancy_ratio', convert: ratio },
  DCGM_FI_PROF_DRAM_ACTIVE: { metric: 'dram_active_ratio', convert: ratio },
  DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: { metric: 'tensor_active_ratio', convert: ratio },
  DCGM_FI_PROF_GR_ENGINE_ACTIVE: { metric: 'gr_engine_active_ratio', convert: ratio },
  DCGM_FI_PROF_PCIE_TX_BYTES: { metric: 'pcie_tx_bytes_per_s' },
  DCGM_FI_PROF_PCIE_RX_BYTES: { metric: 'pcie_rx_bytes_per_s' },
};

/** `-o/--use-old-namespace` names, per etc/1.x-compatibility-metrics.csv. */
const LEGACY_FIELDS: Readonly<Record<string, DcgmField>> = {
  dcgm_gpu_utilization: { metric: 'gpu_util_pct' },
  dcgm_mem_copy_utilization: { metric: 'mem_copy_util_pct' },
  dcgm_enc_utilization: { metric: 'enc_util_pct' },
  dcgm_dec_utilization: { metric: 'dec_util_pct' },
  dcgm_fb_used: { metric: 'fb_used_mib' },
  dcgm_fb_free: { metric: 'fb_free_mib' },
  dcgm_power_usage: { metric: 'power_w' },
  dcgm_total_energy_consumption: { metric: 'energy_mj' },
  dcgm_gpu_temp: { metric: 'temperature_c' },
  dcgm_memory_temp: { metric: 'mem_temperature_c' },
  dcgm_sm_clock: { metric: 'sm_clock_mhz' },
  dcgm_memory_clock: { metric: 'mem_clock_mhz' },
  dcgm_pcie_replay_counter: { metric: 'pcie_replay_total' },
  dcgm_xid_errors: { metric: 'xid_last' },
  dcgm_fi_prof_sm_active: { metric: 'sm_active_ratio', convert: ratio },
  dcgm_fi_prof_sm_occupancy: { metric: 'sm_occupancy_ratio', convert: ratio },
  dcgm_fi_prof_dram_active: { metric: 'dram_active_ratio', convert: ratio },
  dcgm_fi_prof_pipe_tensor_active: { metric: 'tensor_active_ratio', convert: ratio },
  dcgm_fi_prof_gr_engine_active: { metric: 'gr_engine_active_ratio', convert: ratio },
  dcgm_fi_prof_pcie_tx_bytes: { metric: 'pcie_tx_bytes_per_s' },
  dcgm_fi_prof_pcie_rx_bytes: { metric: 'pcie_rx_bytes_per_s' },
};

export const DCGM_FIELD_MAP: Readonly<Record<string, DcgmField>> = { ...CURRENT_FIELDS, ...LEGACY_FIELDS };

/**
 * DCGM fields dcgm-exporter ships in its counter files that the model deliberately leaves out
 * (no use in Fathom's signals yet). Listed so a test can prove every shipped field is decided.
 */
export const DCGM_FIELDS_NOT_NORMALISED: ReadonlySet<string> = new Set([
  'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL',
  'dcgm_nvlink_bandwidth_total',
  'DCGM_FI_DEV_VGPU_LICENSE_STATUS',
  'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS',
  'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
  'DCGM_FI_DEV_ROW_REMAP_FAILURE',
  'DCGM_FI_DRIVER_VERSION', // a label, not a metric
]);

export function isDcgmMetricName(name: string): boolean {
  return name.startsWith('DCGM_FI_') || name.startsWith('dcgm_');
}

/**
 * Key: `UUID` (current) or `uuid` (`-o`); else the `gpu` index, prefixed with `Hostname`/
 * `hostname` when present so two hosts' GPU 0 stay apart. MIG: `GPU_I_ID` is the instance.
 */
export function dcgmKey(labels: Readonly<Record<string, string>>): SeriesKey | undefined {
  const uuid = labels['UUID'] || labels['uuid'];
  const host = labels['Hostname'] || labels['hostname'];
  const index = labels['gpu'];
  const gpu =
    uuid || (index !== undefined && index !== '' ? (host ? `${host}/${index}` : index) : labels['device']);
  if (!gpu) return undefined;
  const gi = labels['GPU_I_ID'];
  return { gpu, instance: gi !== undefined && gi !== '' ? gi : null };
}

export function adaptDcgm(index: SampleIndex): NormalisedSample[] {
  const out: NormalisedSample[] = [];
  // Current names first so that, if an exporter emits both, the current one wins the dedupe.
  for (const [name, field] of Object.entries(DCGM_FIELD_MAP)) {
    for (const sample of index.get(name) ?? []) {
      if (isDcgmSentinel(sample.value)) continue;
      const key = dcgmKey(sample.labels);
      if (!key) continue;
      // GPU_UTIL reads 0 on MIG instances (dcgm-exporter README): a 0 there is not a reading.
      if (field.metric === 'gpu_util_pct' && key.instance !== null) continue;
      const value = field.convert ? field.convert(sample.value) : sample.value;
      const normalised = makeSample('dcgm', key.gpu, key.instance, field.metric, value);
      if (normalised) out.push(normalised);
    }
  }
  // Kubernetes pod mapping can repeat a GPU's line once per pod: keep one reading.
  return dedupeSamples(out);
}
