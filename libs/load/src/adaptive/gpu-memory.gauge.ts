/**
 * The latest GPU memory reading for the adaptive profile. The service calls `report` whenever the
 * gpu-collector's telemetry arrives (used fraction 0..1, the highest over the target's GPUs);
 * readings older than `staleAfterMs` are ignored rather than trusted.
 */
export class GpuMemoryGauge {
  private usedFraction: number | null = null;
  private at = 0;

  constructor(private readonly staleAfterMs = 10_000) {}

  report(usedFraction: number, at = performance.now()): void {
    if (!Number.isFinite(usedFraction)) return;
    this.usedFraction = Math.min(1, Math.max(0, usedFraction));
    this.at = at;
  }

  read(now = performance.now()): number | null {
    return this.usedFraction !== null && now - this.at <= this.staleAfterMs ? this.usedFraction : null;
  }
}
