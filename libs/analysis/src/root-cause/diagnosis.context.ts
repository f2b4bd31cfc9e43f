import { minOf, maxOf, type TelemetryWindow } from '@fathom/contracts';
import { DEFAULT_BANDWIDTH_SATURATION_THRESHOLD } from '@fathom/gpu';
import { CLIENT_BOUND_THRESHOLDS, clientBoundReason } from '@fathom/load';
import { CauseThresholds } from './cause-thresholds.constant';
import { gpuMax, gpuMean, type RunTimeline, type SpanView } from '../evidence/run-timeline';
import type { LayerCall, RecordDigest } from '../evidence/record-digest';

export interface RootCauseOptions {
  /** The first part of a run is ramp-up and not a baseline (ms). */
  readonly warmupMs: number;
  /** Length of the baseline span after warm-up (ms). */
  readonly baselineMs: number;
  /** The recent span judged against the baseline (ms). */
  readonly recentMs: number;
  /** P99 budget (ms): the campaign's, else tier SLO-0's 800 ms (spec). */
  readonly p99BudgetMs: number;
  /** A hop "jumped" when its figure grew by this factor over the baseline. */
  readonly jumpFactor: number;
  /** A gap between tokens at least this long (ms) is a stall, whatever the baseline. */
  readonly stallMs: number;
}

export const DEFAULT_ROOT_CAUSE_OPTIONS: RootCauseOptions = {
  warmupMs: 2_000,
  baselineMs: 2_000,
  recentMs: 3_000,
  // P99 <= 800 ms: tier SLO-0 (spec)
  p99BudgetMs: 800,
  jumpFactor: 2,
  stallMs: 500,
};

/** A layer call with the time of the request that made it. */
export type TimedCall = LayerCall & { readonly at: number; readonly startedAt: number };

/**
 * What every cause function reads, computed once per diagnosis: the recent span and the
 * baseline span, the spec flow's head (P99 against budget and baseline), the first-hop and
 * decode figures, and the GPU context (SM heat map, DRAM bandwidth) the flow consults.
 */
export interface DiagnosisContext {
  readonly timeline: RunTimeline;
  /** Start of the run's evidence (epoch ms). */
  readonly startMs: number;
  readonly nowMs: number;
  readonly options: RootCauseOptions;
  /**
   * The recent span, warm-up included: what is named counts whenever it happened (a fault seen
   * during warm-up is still a cause).
   */
  readonly recent: SpanView;
  /** The recent span past the warm-up, null inside it: latency verdicts judge only this. */
  readonly steady: SpanView | null;
  /** The baseline span after warm-up, once the recent span lies past it. */
  readonly base: SpanView | null;
  readonly hasBaseline: boolean;
  readonly calls: readonly TimedCall[];
  readonly p99: number | null;
  readonly p99Base: number | null;
  /** P99 over budget, or jumped by `jumpFactor` over the baseline. */
  readonly overBudget: boolean;
  readonly flowHead: string;
  readonly ttft: number | null;
  readonly ttftBase: number | null;
  readonly ttftJump: number | null;
  readonly itl: number | null;
  readonly itlBase: number | null;
  readonly itlJump: number | null;
  readonly dram: number | null;
  readonly dramSaturated: boolean;
  readonly gpuLines: readonly string[];
  readonly gpuFigures: Readonly<Record<string, number>>;
  /**
   * Why the client's own clock cannot be trusted over the recent span, or null: a
   * window there that the generator judged client-bound (its health, as validity reads it) or
   * whose host was starved of CPU. Causes whose evidence is latency the client timed (decode
   * slowdown, stalls, queueing, timeouts) are not claimed then: a starved client, or a target
   * starved on the same host, produces every one of them.
   */
  readonly clientLimited: string | null;
}

/**
 * Why the generator's windows ending in (fromMs, toMs] say the client limited them, or null: the
 * first window the generator judged client-bound (`clientBoundReason`), else the first whose host
 * was starved: no idle CPU left (busy at least `CauseThresholds.starvedHostCpuBusy`) and the
 * engine's own thread waited for it (event-loop delay P99 at least the client-bound threshold's
 * 50 ms, whatever the E2E). A busy host whose threads still run on time is not starved. Windows
 * without health are not judged.
 */
export function clientLimitedReason(
  windows: readonly TelemetryWindow[],
  fromMs: number,
  toMs: number,
): string | null {
  let starved: string | null = null;
  for (const w of windows) {
    const end = w.windowStart + w.windowMs;
    if (!w.health || end <= fromMs || end > toMs) continue;
    const bound = clientBoundReason(w.health);
    if (bound) return `the generator judged its window ending ${iso(end)} client-bound: ${bound}`;
    if (
      starved === null &&
      w.health.cpuBusy >= CauseThresholds.starvedHostCpuBusy &&
      w.health.loopDelayP99Ms >= CLIENT_BOUND_THRESHOLDS.loopDelayP99Ms
    )
      starved = `the load-generator's host was starved in the window ending ${iso(end)}: CPU ${(100 * w.health.cpuBusy).toFixed(0)} % busy, its engine thread waited up to ${w.health.loopDelayP99Ms.toFixed(0)} ms (event-loop delay P99)`;
  }
  return starved;
}

export const ms = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(1)} ms`);
export const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
export const iso = (t: number) => new Date(t).toISOString();

/** From the first to the last of the digests, or the span's bounds when there is none. */
export function range(
  digests: readonly RecordDigest[],
  fallback: SpanView,
): { since: number; until: number } {
  if (!digests.length) return { since: fallback.fromMs, until: fallback.toMs };
  return {
    since: minOf(digests.map((d) => d.startedAt)),
    until: maxOf(digests.map((d) => d.at)),
  };
}

export function ratio(recent: number | null, base: number | null): number | null {
  if (recent === null || base === null || base <= 0) return null;
  return recent / base;
}

export function median(values: number[]): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Candidate baselines start this far apart, from the run's start to the end of warm-up (ms). */
const BASELINE_STEP_MS = 500;

/**
 * The run's own baseline: of the `baselineMs` spans starting every BASELINE_STEP_MS from the run's
 * start to the end of warm-up, the one whose E2E P50 was lowest (spans without requests are
 * passed over). A fault that began inside the fixed span after warm-up would otherwise be its own
 * baseline and never jump; warm-up's ramp only ever raises latency, so the quietest span is
 * never one the ramp distorted downwards. Without latency windows (digests only), the span right
 * after warm-up.
 */
function quietestBaseline(timeline: RunTimeline, start: number, options: RootCauseOptions): SpanView {
  let best: SpanView | null = null;
  let bestP50 = Infinity;
  for (let from = start; from <= start + options.warmupMs; from += BASELINE_STEP_MS) {
    const span = timeline.span(from, from + options.baselineMs);
    const p50 = span.requests > 0 ? span.latency.e2e.p50 : null;
    if (p50 !== null && p50 < bestP50) {
      best = span;
      bestP50 = p50;
    }
  }
  return best ?? timeline.span(start + options.warmupMs, start + options.warmupMs + options.baselineMs);
}

/**
 * The context at `nowMs`, or null before any evidence. Ramp-up (connections, JIT, first
 * scrapes) is neither a baseline nor a latency verdict, but what happens in it is named.
 */
export function diagnosisContext(
  timeline: RunTimeline,
  nowMs: number,
  options: RootCauseOptions,
): DiagnosisContext | null {
  const start = timeline.startMs;
  if (start === null) return null;
  const baselineFrom = start + options.warmupMs;
  const baselineTo = baselineFrom + options.baselineMs;
  const recentFrom = Math.max(start, nowMs - options.recentMs);
  if (recentFrom >= nowMs) return null;
  const recent = timeline.span(recentFrom, nowMs);
  const steadyFrom = Math.max(baselineFrom, recentFrom);
  const steady =
    steadyFrom < nowMs ? (steadyFrom === recentFrom ? recent : timeline.span(steadyFrom, nowMs)) : null;
  const hasBaseline = steadyFrom >= baselineTo;
  const base = hasBaseline ? quietestBaseline(timeline, start, options) : null;

  const dram = gpuMax(recent.gpu, 'dram_active_ratio');
  const sm = gpuMean(recent.gpu, 'sm_active_ratio') ?? gpuMean(recent.gpu, 'gpu_util_pct') ?? null;
  const dramSaturated = dram !== null && dram > DEFAULT_BANDWIDTH_SATURATION_THRESHOLD;
  const gpuLines = [
    `SM heat map, recent mean: ${sm === null ? 'no SM reading' : sm > 1 ? `${sm.toFixed(0)} % util` : `${(sm * 100).toFixed(0)} % SM active`}`,
    dram === null
      ? 'DRAM bandwidth: no DCGM reading'
      : `DRAM active peak ${(dram * 100).toFixed(0)} % ${dramSaturated ? '>' : '<='} ${DEFAULT_BANDWIDTH_SATURATION_THRESHOLD * 100} %: ${dramSaturated ? 'bandwidth-bound' : 'not bandwidth-bound'}`,
  ];
  const gpuFigures: Record<string, number> = {
    ...(dram !== null ? { dramActivePeak: dram } : {}),
    ...(sm !== null ? { smActiveMean: sm } : {}),
  };

  const p99 = steady?.latency.e2e.p99 ?? null;
  const p99Base = base?.latency.e2e.p99 ?? null;
  const p99Jump = ratio(p99, p99Base);
  const overBudget =
    p99 !== null && (p99 > options.p99BudgetMs || (p99Jump !== null && p99Jump >= options.jumpFactor));
  const ttft = steady?.latency.ttft.p99 ?? null;
  const ttftBase = base?.latency.ttft.p99 ?? null;
  const itl = steady?.latency.itl.p50 ?? null;
  const itlBase = base?.latency.itl.p50 ?? null;
  // Only the recent span: a starved baseline inflates what the recent span is judged against,
  // which hides a cause but never makes one.
  const clientLimited = clientLimitedReason(timeline.windows, recentFrom, nowMs);
  const calls = recent.digests.flatMap((d) =>
    d.calls.map((c) => ({ ...c, at: d.at, startedAt: d.startedAt })),
  );
  return {
    timeline,
    startMs: start,
    nowMs,
    options,
    recent,
    steady,
    base,
    hasBaseline,
    calls,
    p99,
    p99Base,
    overBudget,
    flowHead: `P99 ${ms(p99)} (baseline ${ms(p99Base)}, budget ${options.p99BudgetMs} ms)`,
    ttft,
    ttftBase,
    ttftJump: ratio(ttft, ttftBase),
    itl,
    itlBase,
    itlJump: ratio(itl, itlBase),
    dram,
    dramSaturated,
    gpuLines,
    gpuFigures,
    clientLimited,
  };
}
