import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import type { GeneratorHealth } from '@fathom/contracts';
import { newLatencyHistogram, recordMs } from './latency-histogram.util';

/**
 * When a window's figures describe the client rather than the target (our thresholds, not the
 * spec's): the engine's thread had no idle time left, or its timers ran late by enough to move
 * what it measured (a neighbour took its core, or its own work queued up): at least 50 ms and half
 * the window's E2E P50, or it waited for its core a quarter of the window, at least a tenth of the
 * E2E P50 per wake-up, or it was on its core or waiting for it nearly all of the window (Linux).
 * A 60 ms delay distorts 1 ms answers, not 2 s ones.
 */
export const CLIENT_BOUND_THRESHOLDS = {
  /** Event-loop utilisation of the engine's thread at or above this: saturated. */
  loopUtilization: 0.95,
  /** Event-loop delay P99 at or above this (ms)... */
  loopDelayP99Ms: 50,
  /** ...and at least this share of the window's E2E P50. */
  loopDelayShareOfE2e: 0.5,
  /**
   * The engine's thread ready but waiting for a core at least this share of the window (a
   * neighbour on its core: the event loop's own figures miss it, as the waits fall while the loop
   * counts itself idle)...
   */
  coreWaitShare: 0.25,
  /** ...with a mean wait per wake-up of at least this share of the window's E2E P50. */
  coreWaitShareOfE2e: 0.1,
  /**
   * The engine's thread on its core or ready to run at least this share of the window: it hardly
   * ever sat waiting for the target. The event loop's utilisation misses this when a neighbour on the
   * core holds it (a stream whose bytes have arrived waits, and the loop counts that as idle): a
   * streamed run at 0.34x a bare reader's rate, busy 88 % and waiting 15 %, passed as valid.
   */
  runnableShare: 0.95,
} as const;

/** Which of `CLIENT_BOUND_THRESHOLDS`' tests a window failed first, or null. */
export type ClientBoundKind = 'busy' | 'runnable' | 'loop-delay' | 'core-wait';

export function clientBoundKind(health: GeneratorHealth): ClientBoundKind | null {
  const t = CLIENT_BOUND_THRESHOLDS;
  if (health.loopUtilization >= t.loopUtilization) return 'busy';
  if (
    health.coreRunShare !== undefined &&
    health.coreWaitShare !== undefined &&
    health.coreRunShare + health.coreWaitShare >= t.runnableShare
  )
    return 'runnable';
  if (
    health.loopDelayP99Ms >= t.loopDelayP99Ms &&
    health.loopDelayP99Ms >= t.loopDelayShareOfE2e * health.e2eP50Ms
  )
    return 'loop-delay';
  if (
    health.coreWaitShare !== undefined &&
    health.coreWaitMeanMs !== undefined &&
    health.coreWaitShare >= t.coreWaitShare &&
    health.coreWaitMeanMs >= t.coreWaitShareOfE2e * health.e2eP50Ms
  )
    return 'core-wait';
  return null;
}

/** Whether one window's health says the client limited it; the reason, or null. */
export function clientBoundReason(health: GeneratorHealth): string | null {
  switch (clientBoundKind(health)) {
    case 'busy':
      return `engine thread busy ${(health.loopUtilization * 100).toFixed(0)} % of the window`;
    case 'runnable':
      return (
        `engine thread on its core ${(health.coreRunShare! * 100).toFixed(0)} % of the window and ` +
        `waiting for it ${(health.coreWaitShare! * 100).toFixed(0)} %: idle under 5 %`
      );
    case 'loop-delay':
      return `event-loop delay P99 ${health.loopDelayP99Ms.toFixed(1)} ms against E2E P50 ${health.e2eP50Ms.toFixed(1)} ms`;
    case 'core-wait':
      return (
        `engine thread waited for its core ${(health.coreWaitShare! * 100).toFixed(0)} % of the window ` +
        `(${(health.coreWaitMeanMs! * 1000).toFixed(0)} us per wake-up against E2E P50 ${health.e2eP50Ms.toFixed(3)} ms)`
      );
    case null:
      return null;
  }
}

/**
 * The calling thread's scheduler figures (Linux `/proc/thread-self/schedstat`): ns on a core, ns
 * ready but waiting for one, and the times it got one; null where the file is missing.
 */
export function threadSchedStat(): { runNs: number; waitNs: number; slices: number } | null {
  try {
    const [run, wait, slices] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ').map(Number);
    return Number.isFinite(run) && Number.isFinite(wait) && Number.isFinite(slices)
      ? { runNs: run, waitNs: wait, slices }
      : null;
  } catch {
    return null;
  }
}

/**
 * Measures the generator's own health while it loads, one sample per window: event-loop delay
 * and utilisation of the thread it runs on (the engine's), the host's CPU busy ratio, send
 * lateness (actual minus intended send time), the in-flight backlog and (Linux) how long the
 * thread was on its core and how long it waited for it. Single owner (the engine's event loop); `observeSend` is on the hot
 * path (one histogram record).
 */
export class GeneratorHealthMonitor {
  private readonly delay: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private utilization = performance.eventLoopUtilization();
  private cpuTimes = hostCpuTimes();
  private readonly late = newLatencyHistogram();
  private inFlightMax = 0;
  /** The thread's scheduler figures at the window's start (null: not measured here). */
  private sched = threadSchedStat();

  /** Made on the engine's thread: the core waits it measures are that thread's. */
  constructor(private readonly concurrency: number) {
    this.delay.enable();
  }

  observeSend(lateMs: number, inFlight: number): void {
    if (lateMs > 0) recordMs(this.late, lateMs);
    if (inFlight > this.inFlightMax) this.inFlightMax = inFlight;
  }

  /**
   * The window since the last sample (`records` published in its `windowMs`, its E2E P50);
   * starts the next one.
   */
  sample(records: number, windowMs: number, e2eP50Ms: number): GeneratorHealth {
    const utilization = performance.eventLoopUtilization(this.utilization);
    this.utilization = performance.eventLoopUtilization();
    const times = hostCpuTimes();
    const total = times.total - this.cpuTimes.total;
    const cpuBusy = total > 0 ? Math.min(1, Math.max(0, (times.busy - this.cpuTimes.busy) / total)) : 0;
    this.cpuTimes = times;
    const nsToMs = (ns: number) => (Number.isFinite(ns) ? ns / 1e6 : 0);
    const health: GeneratorHealth = {
      loopDelayP99Ms: this.delay.count ? nsToMs(this.delay.percentile(99)) : 0,
      loopDelayMaxMs: this.delay.count ? nsToMs(this.delay.max) : 0,
      loopUtilization: Math.min(1, Math.max(0, utilization.utilization)),
      cpuBusy,
      sendLateP99Ms: this.late.totalCount ? this.late.getValueAtPercentile(99) / 1000 : 0,
      inFlightMax: this.inFlightMax,
      concurrency: this.concurrency,
      e2eP50Ms,
      recordBudgetPerSec: windowMs > 0 ? (records * 1000) / windowMs : 0,
      ...this.coreShares(windowMs),
    };
    this.delay.reset();
    this.late.reset();
    this.inFlightMax = 0;
    return health;
  }

  close(): void {
    this.delay.disable();
  }

  /**
   * How long the thread was on a core and waited for one in the `windowMs` since the last sample;
   * {} where not measured.
   */
  private coreShares(
    windowMs: number,
  ): Pick<GeneratorHealth, 'coreWaitShare' | 'coreWaitMeanMs' | 'coreRunShare'> {
    const before = this.sched;
    const after = threadSchedStat();
    this.sched = after;
    if (before === null || after === null || windowMs <= 0) return {};
    const waitMs = Math.max(0, after.waitNs - before.waitNs) / 1e6;
    const runMs = Math.max(0, after.runNs - before.runNs) / 1e6;
    const slices = Math.max(0, after.slices - before.slices);
    return {
      coreWaitShare: Math.min(1, waitMs / windowMs),
      coreWaitMeanMs: slices > 0 ? waitMs / slices : 0,
      coreRunShare: Math.min(1, runMs / windowMs),
    };
  }
}

function hostCpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const cpu of cpus()) {
    const t = cpu.times;
    const all = t.user + t.nice + t.sys + t.idle + t.irq;
    total += all;
    busy += all - t.idle;
  }
  return { busy, total };
}
