import type { BreakerChange, GpuTelemetry } from '@fathom/contracts';
import { GpuMemoryGauge } from '@fathom/load';

/** What the engine must know of the breakers: paths it must not send on, or all of them. */
export interface GateState {
  readonly closedPaths: readonly string[];
  readonly closedAll: boolean;
}

/**
 * The live controls of one shard that come from other services while it runs: circuit breakers
 * (the analyzer's breaker changes: while a breaker is open, its request paths are gated, i.e. not
 * sent and counted `gated`; a breaker naming no path gates every path of the run) and the GPU
 * memory reading the adaptive profile holds under its ceiling (the gpu-collector's telemetry).
 * Inline, the engine reads `gate` and `gpu` directly; on a worker thread the engine gets each
 * change through `onChange`.
 */
export class ShardControls {
  readonly gpu = new GpuMemoryGauge();
  /** Open (or half-open) breakers by key: their paths, or null for "every path". */
  private readonly open = new Map<string, readonly string[] | null>();
  private listener: ((change: { gate: GateState } | { gpuMemoryUsed: number }) => void) | null = null;

  readonly gate = (path: string): boolean => {
    for (const paths of this.open.values()) if (paths === null || paths.includes(path)) return false;
    return true;
  };

  /** One listener (the engine thread's forwarder). */
  onChange(listener: (change: { gate: GateState } | { gpuMemoryUsed: number }) => void): void {
    this.listener = listener;
  }

  /**
   * A breaker changed. `open` gates its paths; `half-open` lets trial calls through (as a
   * breaker in that state does), `closed` ends the gate.
   */
  breaker(change: BreakerChange): void {
    const { target, layer, node } = change.breaker;
    const key = `${target}|${layer}|${node}`;
    if (change.to === 'open') this.open.set(key, change.paths?.length ? [...change.paths] : null);
    else if (!this.open.delete(key)) return;
    this.listener?.({ gate: this.gateState() });
  }

  /** A GPU telemetry event: the highest framebuffer use over its GPUs, when it carries one. */
  gpuTelemetry(event: GpuTelemetry): void {
    const used = gpuMemoryUsedFraction(event);
    if (used === null) return;
    this.gpu.report(used);
    this.listener?.({ gpuMemoryUsed: used });
  }

  gateState(): GateState {
    const closedPaths = new Set<string>();
    let closedAll = false;
    for (const paths of this.open.values()) {
      if (paths === null) closedAll = true;
      else for (const path of paths) closedPaths.add(path);
    }
    return { closedPaths: [...closedPaths], closedAll };
  }
}

/**
 * Framebuffer memory in use, 0..1, the highest over the event's GPUs: `fb_used_mib` over
 * `fb_total_mib` (DCGM, Triton), or over used + free (nvidia-smi gives both). null when no GPU
 * in the event has both figures (a scrape gap, an inference server's /metrics alone).
 */
export function gpuMemoryUsedFraction(event: GpuTelemetry): number | null {
  const byGpu = new Map<string, { used?: number; total?: number; free?: number }>();
  for (const sample of event.samples) {
    if (
      sample.metric !== 'fb_used_mib' &&
      sample.metric !== 'fb_total_mib' &&
      sample.metric !== 'fb_free_mib'
    )
      continue;
    const figures = byGpu.get(sample.gpu) ?? {};
    if (sample.metric === 'fb_used_mib') figures.used = sample.value;
    else if (sample.metric === 'fb_total_mib') figures.total = sample.value;
    else figures.free = sample.value;
    byGpu.set(sample.gpu, figures);
  }
  let highest: number | null = null;
  for (const { used, total, free } of byGpu.values()) {
    if (used === undefined) continue;
    const capacity = total ?? (free === undefined ? undefined : used + free);
    if (capacity === undefined || !(capacity > 0)) continue;
    const fraction = Math.min(1, Math.max(0, used / capacity));
    highest = highest === null ? fraction : Math.max(highest, fraction);
  }
  return highest;
}
