import type { NormalisedSample } from '../model/gpu-sample.model';

/**
 * Default saturation threshold: 0.8 of peak. The spec names no figure. Assumption: DCGM's
 * DRAM_ACTIVE is the fraction of cycles the memory interface is busy, i.e. achieved over peak
 * bandwidth (DCGM user guide, profiling metrics); a kernel sustaining more than ~80 % of peak is
 * treated as memory-bandwidth bound in common roofline practice. Override per run.
 */
export const DEFAULT_BANDWIDTH_SATURATION_THRESHOLD = 0.8;

export interface BandwidthSaturation {
  readonly gpu: string;
  readonly instance: string | null;
  readonly saturated: boolean;
  /** 0..1 utilisation the verdict is based on. */
  readonly utilisation: number;
  /**
   * `dram_active`: DCGM profiling DRAM_ACTIVE (the real measure). `mem_copy_util`: the
   * memory-controller busy percentage (nvidia-smi utilization.memory / DCGM MEM_COPY_UTIL), a
   * coarser proxy used only where profiling metrics are absent.
   */
  readonly basis: 'dram_active' | 'mem_copy_util';
  readonly threshold: number;
}

/** One verdict per (gpu, instance) that has either reading in this snapshot. */
export function memoryBandwidthSaturation(
  samples: readonly NormalisedSample[],
  threshold = DEFAULT_BANDWIDTH_SATURATION_THRESHOLD,
): BandwidthSaturation[] {
  const byKey = new Map<string, { gpu: string; instance: string | null; dram?: number; memCopy?: number }>();
  for (const s of samples) {
    if (s.metric !== 'dram_active_ratio' && s.metric !== 'mem_copy_util_pct') continue;
    const key = `${s.gpu}\u0000${s.instance ?? ''}`;
    const entry = byKey.get(key) ?? { gpu: s.gpu, instance: s.instance };
    if (s.metric === 'dram_active_ratio') entry.dram = s.value;
    else entry.memCopy = s.value / 100;
    byKey.set(key, entry);
  }
  const out: BandwidthSaturation[] = [];
  for (const entry of byKey.values()) {
    const basis = entry.dram !== undefined ? 'dram_active' : 'mem_copy_util';
    const utilisation = (entry.dram ?? entry.memCopy) as number;
    out.push({
      gpu: entry.gpu,
      instance: entry.instance,
      saturated: utilisation > threshold,
      utilisation,
      basis,
      threshold,
    });
  }
  return out;
}
