import { pushTo } from '@fathom/contracts';
import type {
  LoadPhase,
  RunSummary,
  SloThresholds,
  SweepKnee,
  SweepStep,
  TelemetryWindow,
} from '@fathom/contracts';
import { mergeWindows, quantilesFromHistogram, sloVerdict, type MergedWindows } from '@fathom/load';
import type { GoodputCounts } from './token-stats.accumulator';

/** Goodput stops rising at the first step within 5 % of the sweep's best goodput. */
export const GOODPUT_PLATEAU_SHARE = 0.95;

/** A window's phase; windows from generators older than phases are the whole run, measured. */
export function phaseOf(window: Pick<TelemetryWindow, 'phase'>): LoadPhase {
  return window.phase ?? { index: 0, kind: 'run', segment: 'measured', elapsedMs: 0 };
}

/** Windows whose requests count in latency verdicts (not warm-up, not cool-down). */
export function measuredWindows<W extends Pick<TelemetryWindow, 'phase'>>(windows: readonly W[]): W[] {
  return windows.filter((w) => phaseOf(w).segment === 'measured');
}

/** Latency quantiles of a merge, with the campaign's extra percentiles. */
export function phaseLatency(merged: MergedWindows, percentiles?: readonly number[]): SweepStep['latencyMs'] {
  const q = (name: keyof MergedWindows['histograms']) =>
    percentiles?.length
      ? quantilesFromHistogram(merged.histograms[name], percentiles)
      : merged.quantiles[name];
  return { e2e: q('e2e'), correctedE2e: q('correctedE2e'), ttft: q('ttft'), itl: q('itl'), tpot: q('tpot') };
}

/** Warm-up or cool-down figures; undefined when no window of that segment exists. */
export function segmentFigures(
  windows: readonly TelemetryWindow[],
  segment: 'warmup' | 'cooldown',
  percentiles?: readonly number[],
): RunSummary['warmup'] {
  const of = windows.filter((w) => phaseOf(w).segment === segment);
  if (!of.length) return undefined;
  const merged = mergeWindows(of);
  return { requests: merged.requests, errors: merged.errors, latencyMs: phaseLatency(merged, percentiles) };
}

/** Goodput of the judged records (`TokenStatsAccumulator`), scaled to a request rate (as the run's). */
export function goodputOf(
  { judged, good, semanticallyGood }: GoodputCounts,
  requestsPerSec: number,
): NonNullable<RunSummary['semantic']['goodput']> {
  return {
    judged,
    good,
    semanticallyGood,
    goodputPerSec: judged ? (requestsPerSec * good) / judged : 0,
    semanticGoodputPerSec: judged ? (requestsPerSec * semanticallyGood) / judged : 0,
  };
}

/**
 * The sweep's steps (measured segments only), in load order, and its knee. Undefined when the
 * windows carry no step beyond the whole run (not a sweep).
 */
export function sweepSummary(
  windows: readonly TelemetryWindow[],
  measuredByStep: ReadonlyMap<number, GoodputCounts>,
  slo: SloThresholds,
  percentiles?: readonly number[],
): RunSummary['sweep'] {
  const measured = measuredWindows(windows);
  const byStep = new Map<number, TelemetryWindow[]>();
  for (const w of measured) {
    pushTo(byStep, phaseOf(w).index, w);
  }
  if (![...byStep.values()].some((ws) => phaseOf(ws[0]).kind !== 'run')) return undefined;
  const steps: SweepStep[] = [...byStep.entries()].map(([index, ws]) =>
    stepOf(index, ws, measuredByStep.get(index), slo, percentiles),
  );
  steps.sort((a, b) => loadRank(a) - loadRank(b) || a.index - b.index);
  return { steps, knee: kneeOf(steps) };
}

function stepOf(
  index: number,
  windows: readonly TelemetryWindow[],
  judged: GoodputCounts | undefined,
  slo: SloThresholds,
  percentiles?: readonly number[],
): SweepStep {
  const merged = mergeWindows(windows);
  // Per shard: its target, and its segment's length (the latest elapsedMs); shards run side by side.
  const perShard = new Map<string, LoadPhase>();
  for (const w of windows) {
    const key = `${w.generatorId}/${w.shard}`;
    const seen = perShard.get(key);
    if (!seen || seen.elapsedMs < phaseOf(w).elapsedMs) perShard.set(key, phaseOf(w));
  }
  const shards = [...perShard.values()];
  const kind = shards[0].kind;
  const durationMs = Math.max(0, ...shards.map((p) => p.elapsedMs));
  const seconds = durationMs / 1000;
  const requestsPerSec = seconds > 0 ? merged.requests / seconds : 0;
  const errorRate = merged.requests ? merged.errors / merged.requests : 0;
  const latencyMs = phaseLatency(merged, percentiles);
  const rates = shards.filter((p) => p.ratePerSec !== undefined);
  const users = shards.filter((p) => p.concurrency !== undefined);
  return {
    index,
    kind,
    targetRatePerSec: rates.length ? rates.reduce((n, p) => n + (p.ratePerSec ?? 0), 0) : null,
    concurrency: users.length ? users.reduce((n, p) => n + (p.concurrency ?? 0), 0) : null,
    durationMs,
    requests: merged.requests,
    errors: merged.errors,
    errorRate,
    throughput: {
      requestsPerSec,
      outputTokensPerSec: seconds > 0 ? merged.outputTokens / seconds : 0,
    },
    latencyMs,
    goodput: judged?.judged ? goodputOf(judged, requestsPerSec) : null,
    slo: sloVerdict(
      {
        requests: merged.requests,
        errorRate,
        p95Ms: latencyMs.e2e.p95,
        p99Ms: latencyMs.e2e.p99,
        ttftP99Ms: latencyMs.ttft.p99,
        tpotP99Ms: latencyMs.tpot.p99,
      },
      slo,
    ),
  };
}

/** Load order: synchronous (one user), rate steps by rate, concurrency steps by users, throughput (all users). */
function loadRank(step: SweepStep): number {
  switch (step.kind) {
    case 'synchronous':
      return 0;
    case 'rate':
      return 1 + (step.targetRatePerSec ?? 0);
    case 'concurrency':
      return 1 + (step.concurrency ?? 0);
    case 'throughput':
      return Number.MAX_SAFE_INTEGER;
    default:
      return 1;
  }
}

/** The knee of steps in load order: the highest load within the SLO, and where goodput stops rising. */
export function kneeOf(steps: readonly SweepStep[]): SweepKnee {
  const passing = steps.filter((s) => s.slo.passed);
  const sloMax = passing.length ? passing[passing.length - 1] : null;
  const withGoodput = steps.filter((s) => s.goodput !== null);
  const peak = withGoodput.length ? Math.max(...withGoodput.map((s) => s.goodput!.goodputPerSec)) : null;
  const plateau =
    peak !== null && peak > 0
      ? (withGoodput.find((s) => s.goodput!.goodputPerSec >= GOODPUT_PLATEAU_SHARE * peak) ?? null)
      : null;
  const load = (s: SweepStep) =>
    s.kind === 'rate'
      ? `${(s.targetRatePerSec ?? 0).toFixed(1)} req/s`
      : `${s.kind}${s.concurrency !== null ? ` (${s.concurrency} users)` : ''}`;
  const parts = [
    sloMax
      ? `highest load within the SLO: step ${sloMax.index}, ${load(sloMax)}, achieved ${sloMax.throughput.requestsPerSec.toFixed(1)} req/s`
      : 'no step met the SLO',
    plateau
      ? `goodput stops rising at step ${plateau.index}, ${load(plateau)} (${plateau.goodput!.goodputPerSec.toFixed(1)} of a peak ${peak!.toFixed(1)} req/s)`
      : 'no goodput judged (no records reached the semantic-monitor)',
  ];
  return {
    sloMaxStep: sloMax?.index ?? null,
    sloMaxRequestsPerSec: sloMax?.throughput.requestsPerSec ?? null,
    goodputPlateauStep: plateau?.index ?? null,
    goodputPeakPerSec: peak,
    text: parts.join('; '),
  };
}
