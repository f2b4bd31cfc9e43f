import type { NormalisedSample } from '../model/gpu-sample.model';
import { DEFAULT_BANDWIDTH_SATURATION_THRESHOLD, memoryBandwidthSaturation } from './bandwidth-saturation';

/** Consecutive saturated scrapes that make a DRAM saturation episode. */
export const DRAM_SATURATED_SCRAPES = 3;

export interface DramSaturationChange {
  readonly kind: 'opened' | 'cleared';
  /** Peak utilisation over the GPUs of the scrape that changed it (0..1). */
  readonly peak: number;
  readonly threshold: number;
  readonly scrapes: number;
  readonly basis: 'dram_active' | 'mem_copy_util';
}

/**
 * GPU memory bandwidth saturated (the spec's root-cause flow: "is GPU memory bandwidth
 * saturated?") over consecutive scrapes of one source: `opened` once the peak over its GPUs is
 * above the threshold for `DRAM_SATURATED_SCRAPES` scrapes in a row, `cleared` at the first scrape
 * under it after that. A scrape without a bandwidth reading changes nothing. One owner.
 */
export class DramSaturationWatch {
  private run = 0;
  private open = false;

  constructor(
    private readonly threshold = DEFAULT_BANDWIDTH_SATURATION_THRESHOLD,
    private readonly scrapes = DRAM_SATURATED_SCRAPES,
  ) {}

  observe(samples: readonly NormalisedSample[]): DramSaturationChange | null {
    const verdicts = memoryBandwidthSaturation(samples, this.threshold);
    if (!verdicts.length) return null;
    const peak = Math.max(...verdicts.map((v) => v.utilisation));
    const basis = verdicts.some((v) => v.basis === 'dram_active') ? 'dram_active' : 'mem_copy_util';
    const saturated = verdicts.some((v) => v.saturated);
    this.run = saturated ? this.run + 1 : 0;
    const change = (kind: DramSaturationChange['kind']): DramSaturationChange => ({
      kind,
      peak,
      threshold: this.threshold,
      scrapes: this.run,
      basis,
    });
    if (!this.open && this.run >= this.scrapes) {
      this.open = true;
      return change('opened');
    }
    if (this.open && !saturated) {
      this.open = false;
      return change('cleared');
    }
    return null;
  }
}
