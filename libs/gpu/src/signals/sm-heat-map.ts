import { minOf, maxOf } from '@fathom/contracts';
import type { NormalisedSample } from '../model/gpu-sample.model';

export interface TimedSnapshot {
  readonly atMs: number;
  readonly samples: readonly NormalisedSample[];
}

export interface SmHeatMap {
  /** Row labels: the GPU, or `gpu/instance` for a MIG instance. Sorted. */
  readonly rows: string[];
  readonly bucketMs: number;
  /** Start of each column (epoch ms). */
  readonly bucketStartsMs: number[];
  /** cells[row][column]: mean SM utilisation 0..1 in that bucket; null is a gap (no reading). */
  readonly cells: (number | null)[][];
  /** Per row: `sm_active` (DCGM profiling) or `gpu_util` (fallback: any kernel running). */
  readonly basis: ('sm_active' | 'gpu_util')[];
}

/**
 * The SM-utilisation heat map of the root-cause flow: GPU x time buckets. Uses SM_ACTIVE when a
 * GPU reports it (how busy the SMs are) and falls back to GPU_UTIL/100 (only whether a kernel
 * ran) otherwise; a row never mixes the two.
 */
export function smUtilisationHeatMap(snapshots: readonly TimedSnapshot[], bucketMs: number): SmHeatMap {
  if (!(bucketMs > 0)) throw new Error('bucketMs must be positive');
  const rowsWithSmActive = new Set<string>();
  const readings: { row: string; atMs: number; metric: string; value: number }[] = [];
  for (const snapshot of snapshots) {
    for (const s of snapshot.samples) {
      if (s.metric !== 'sm_active_ratio' && s.metric !== 'gpu_util_pct') continue;
      const row = s.instance === null ? s.gpu : `${s.gpu}/${s.instance}`;
      if (s.metric === 'sm_active_ratio') rowsWithSmActive.add(row);
      readings.push({
        row,
        atMs: snapshot.atMs,
        metric: s.metric,
        value: s.metric === 'gpu_util_pct' ? s.value / 100 : s.value,
      });
    }
  }
  if (readings.length === 0) return { rows: [], bucketMs, bucketStartsMs: [], cells: [], basis: [] };
  const start = Math.floor(minOf(readings.map((r) => r.atMs)) / bucketMs) * bucketMs;
  const end = maxOf(readings.map((r) => r.atMs));
  const columns = Math.floor((end - start) / bucketMs) + 1;
  const rows = [...new Set(readings.map((r) => r.row))].sort();
  const sums = rows.map(() => new Array<number>(columns).fill(0));
  const counts = rows.map(() => new Array<number>(columns).fill(0));
  for (const r of readings) {
    const wanted = rowsWithSmActive.has(r.row) ? 'sm_active_ratio' : 'gpu_util_pct';
    if (r.metric !== wanted) continue;
    const row = rows.indexOf(r.row);
    const column = Math.floor((r.atMs - start) / bucketMs);
    sums[row][column] += r.value;
    counts[row][column] += 1;
  }
  return {
    rows,
    bucketMs,
    bucketStartsMs: Array.from({ length: columns }, (_, i) => start + i * bucketMs),
    cells: sums.map((rowSums, i) => rowSums.map((sum, j) => (counts[i][j] ? sum / counts[i][j] : null))),
    basis: rows.map((row) => (rowsWithSmActive.has(row) ? 'sm_active' : 'gpu_util')),
  };
}
