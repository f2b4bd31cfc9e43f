import {
  minOf,
  maxOf,
  type MeasurementValidity,
  type RootCauseCause,
  type TelemetryWindow,
} from '@fathom/contracts';
import type { TrackedCause } from '../root-cause/root-cause.engine';
import { CLIENT_BOUND_THRESHOLDS, clientBoundKind } from '@fathom/load';

/** A run is client-bound when at least this share of its judged windows were (our choice). */
export const CLIENT_BOUND_WINDOW_SHARE = 0.5;

export const CLIENT_BOUND_ADVICE = [
  'lower load.recordsPerSecond',
  'spread the load over more shards and load-generators, or more client cores',
  'keep other work off the client cores',
];

export interface ClientBoundVerdict {
  readonly windows: number;
  readonly boundWindows: number;
  readonly detail: string;
  readonly figures: Record<string, number>;
  readonly since: number;
  readonly until: number;
}

/**
 * The windows a run's generator health is judged on: those with `health`, without each shard's
 * first and last (ramp, partial), so a shard with fewer than three gives none.
 */
function judgedWindows(windows: readonly TelemetryWindow[]): TelemetryWindow[] {
  const byShard = new Map<string, TelemetryWindow[]>();
  for (const w of windows) {
    if (!w.health) continue;
    const key = `${w.generatorId}/${w.shard}`;
    // Pushed, not copied: a copy per window was quadratic (a 24 h shard has 86,400 windows).
    const list = byShard.get(key);
    if (list) list.push(w);
    else byShard.set(key, [w]);
  }
  const judged: TelemetryWindow[] = [];
  for (const list of byShard.values()) {
    // The first window holds the ramp (connections, JIT), the last is partial: judged only between.
    if (list.length < 3) continue;
    list.sort((a, b) => a.seq - b.seq);
    for (let i = 1; i < list.length - 1; i++) judged.push(list[i]);
  }
  return judged;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

type GeneratorHealthOfRun = NonNullable<MeasurementValidity['generator']>;

/**
 * The generator's health over a run's judged windows (see `judgedWindows`; null when none) and
 * whether it limited the run (`judgeClientBound`), from one pass over the windows.
 */
export function assessGenerator(windows: readonly TelemetryWindow[]): {
  health: GeneratorHealthOfRun | null;
  bound: ClientBoundVerdict | null;
} {
  const judged = judgedWindows(windows);
  if (!judged.length) return { health: null, bound: null };
  // Measured on Linux only: absent from every window elsewhere.
  const waits = judged.map((w) => w.health!.coreWaitShare).filter((x): x is number => x !== undefined);
  const runs = judged.map((w) => w.health!.coreRunShare).filter((x): x is number => x !== undefined);
  const health: GeneratorHealthOfRun = {
    windows: judged.length,
    loopUtilizationMedian: median(judged.map((w) => w.health!.loopUtilization)),
    loopDelayP99MaxMs: maxOf(judged.map((w) => w.health!.loopDelayP99Ms)),
    ...(waits.length ? { coreWaitShareMedian: median(waits) } : {}),
    ...(runs.length ? { coreRunShareMedian: median(runs) } : {}),
  };
  return { health, bound: verdictOf(judged, health) };
}

/**
 * Whether the generator, not the target, limited a run, from each judged window's health (see
 * `judgedWindows`). Null: not client-bound, or nothing to judge.
 */
export function judgeClientBound(windows: readonly TelemetryWindow[]): ClientBoundVerdict | null {
  return assessGenerator(windows).bound;
}

function verdictOf(
  judged: readonly TelemetryWindow[],
  health: GeneratorHealthOfRun,
): ClientBoundVerdict | null {
  const kinds = judged.map((w) => clientBoundKind(w.health!));
  const bound = judged.filter((_, i) => kinds[i] !== null);
  if (bound.length / judged.length < CLIENT_BOUND_WINDOW_SHARE) return null;
  const count = (kind: string) => kinds.filter((k) => k === kind).length;
  const utilization = health.loopUtilizationMedian;
  const delayP99 = health.loopDelayP99MaxMs;
  const coreWait = health.coreWaitShareMedian ?? null;
  const coreRun = health.coreRunShareMedian ?? null;
  const cpuBusy = median(judged.map((w) => w.health!.cpuBusy));
  const sendLate = maxOf(judged.map((w) => w.health!.sendLateP99Ms));
  const t = CLIENT_BOUND_THRESHOLDS;
  const detail =
    `the client limited this run in ${bound.length} of ${judged.length} windows ` +
    `(${count('busy')} with its engine thread >= ${t.loopUtilization * 100} % busy, ` +
    `${count('runnable')} with it on its core or waiting for it >= ${t.runnableShare * 100} % of the window, ` +
    `${count('loop-delay')} with event-loop delay P99 >= ${t.loopDelayP99Ms} ms and half the E2E P50, ` +
    `${count('core-wait')} with its engine thread waiting for its core >= ${t.coreWaitShare * 100} % of the window; ` +
    `median busy ${(utilization * 100).toFixed(0)} %, loop delay P99 up to ${delayP99.toFixed(1)} ms, ` +
    (coreWait === null ? '' : `median core wait ${(coreWait * 100).toFixed(0)} %, `) +
    (coreRun === null ? '' : `median time on its core ${(coreRun * 100).toFixed(0)} %, `) +
    `host CPU busy ${(cpuBusy * 100).toFixed(0)} %, send lateness P99 up to ${sendLate.toFixed(1)} ms): ` +
    'its figures describe the generator, not the target';
  return {
    windows: judged.length,
    boundWindows: bound.length,
    detail,
    figures: {
      windows: judged.length,
      boundWindows: bound.length,
      loopUtilizationMedian: utilization,
      loopDelayP99MaxMs: delayP99,
      cpuBusyMedian: cpuBusy,
      sendLateP99MaxMs: sendLate,
      ...(coreWait === null ? {} : { coreWaitShareMedian: coreWait }),
      ...(coreRun === null ? {} : { coreRunShareMedian: coreRun }),
    },
    since: minOf(bound.map((w) => w.windowStart)),
    until: maxOf(bound.map((w) => w.windowStart + w.windowMs)),
  };
}

/** The root cause a client-bound run names, alone: no target cause is claimed from its figures. */
export function clientBoundRootCause(verdict: ClientBoundVerdict): RootCauseCause {
  return {
    kind: 'client-bound',
    title: 'The load generator, not the target, limited this run',
    confidence: Math.min(1, verdict.boundWindows / verdict.windows),
    since: verdict.since,
    until: verdict.until,
    evidence: [verdict.detail],
    figures: verdict.figures,
    advice: CLIENT_BOUND_ADVICE,
  };
}

/**
 * The causes a finished run reports: when the client limited it, `client-bound` alone (no target
 * cause is claimed from figures the client shaped), else the causes tracked while it ran.
 */
export function rootCausesOfRun(
  windows: readonly TelemetryWindow[],
  tracked: readonly TrackedCause[],
  now = Date.now(),
): TrackedCause[] {
  const bound = judgeClientBound(windows);
  return bound ? [{ ...clientBoundRootCause(bound), namedAt: now }] : [...tracked];
}
