import type { HostReading } from './host-resource.reader';

/** Spec, "Edge sampling": reduce when CPU > 75 % and free memory < 128 MB (taken as MiB). */
export const EDGE_CPU_THRESHOLD_PCT = 75;
export const EDGE_FREE_MEM_THRESHOLD_BYTES = 128 * 1024 * 1024;

export type SamplingMode = 'full' | 'reduced';

export interface EdgeSamplingOptions {
  readonly cpuThresholdPct?: number;
  readonly freeMemThresholdBytes?: number;
  /**
   * Consecutive healthy readings needed before returning to full mode, so a host hovering at the
   * threshold does not flap (and flood the bus with mode-change events). The spec gives no
   * figure; 3 readings is our choice.
   */
  readonly recoverAfterReadings?: number;
}

export interface SamplingDecision {
  readonly mode: SamplingMode;
  /** True when this reading switched the mode: the collector says so in an event. */
  readonly changed: boolean;
  readonly reason: string;
}

/**
 * Decides the collector's sampling mode from its own host's load (spec: edge sampling keeps only
 * the essentials when the host is starved). Enters reduced mode on the first reading with CPU
 * above the threshold AND free memory below it; returns to full after `recoverAfterReadings`
 * consecutive readings without that condition.
 */
export class EdgeSamplingGovernor {
  private current: SamplingMode = 'full';
  private healthyStreak = 0;
  private readonly cpuThreshold: number;
  private readonly memThreshold: number;
  private readonly recoverAfter: number;

  constructor(options: EdgeSamplingOptions = {}) {
    this.cpuThreshold = options.cpuThresholdPct ?? EDGE_CPU_THRESHOLD_PCT;
    this.memThreshold = options.freeMemThresholdBytes ?? EDGE_FREE_MEM_THRESHOLD_BYTES;
    this.recoverAfter = Math.max(1, options.recoverAfterReadings ?? 3);
  }

  get mode(): SamplingMode {
    return this.current;
  }

  evaluate(reading: HostReading): SamplingDecision {
    const starved = reading.cpuPct > this.cpuThreshold && reading.freeMemBytes < this.memThreshold;
    const load = `CPU ${reading.cpuPct.toFixed(1)} %, free memory ${(reading.freeMemBytes / 1048576).toFixed(0)} MiB`;
    if (starved) {
      this.healthyStreak = 0;
      const changed = this.current === 'full';
      this.current = 'reduced';
      return {
        mode: 'reduced',
        changed,
        reason: `${load}: above ${this.cpuThreshold} % CPU and below ${this.memThreshold / 1048576} MiB free`,
      };
    }
    if (this.current === 'reduced') {
      this.healthyStreak++;
      if (this.healthyStreak >= this.recoverAfter) {
        this.current = 'full';
        this.healthyStreak = 0;
        return {
          mode: 'full',
          changed: true,
          reason: `${load}: recovered for ${this.recoverAfter} readings`,
        };
      }
      return {
        mode: 'reduced',
        changed: false,
        reason: `${load}: recovering (${this.healthyStreak}/${this.recoverAfter})`,
      };
    }
    return { mode: 'full', changed: false, reason: load };
  }
}
