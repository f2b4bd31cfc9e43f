import type { ArrivalSchedule } from '../profile/arrival.schedule';
import type { ExecutorContext } from './executor.context';

export interface OpenExecutorOptions {
  schedule: ArrivalSchedule;
  startMono: number;
  endMono: number;
  maxInFlight: number;
  lateToleranceMs: number;
  maxLatenessMs: number;
}

/**
 * Open model: iterations start at their scheduled times whatever the target does. When
 * `maxInFlight` requests are outstanding the next iteration waits for a slot (as a wrk2
 * connection does) and its latency still counts from its intended time (corrected E2E); it is
 * `late` if it starts more than lateToleranceMs after that time, and `dropped` if more than
 * maxLatenessMs, or if the shard's duration (plus lateToleranceMs) ends before it could start.
 */
export async function runOpen(ctx: ExecutorContext, options: OpenExecutorOptions): Promise<void> {
  const { schedule, startMono, endMono, maxInFlight, lateToleranceMs, maxLatenessMs } = options;
  let arrival = schedule.next();
  while (arrival !== null && !ctx.stopped) {
    const intended = startMono + arrival.atMs;
    let now = performance.now();
    // setTimeout has millisecond granularity: an arrival due within 1 ms is sent now.
    if (intended - now >= 1) {
      await ctx.sleeper.sleep(intended - now);
      if (ctx.stopped) break;
    }
    while (ctx.inFlight >= maxInFlight && !ctx.stopped) await ctx.waitForSlot();
    if (ctx.stopped) break;
    now = performance.now();
    // An iteration due before the end still goes if it can start within the late tolerance.
    if (now >= endMono + lateToleranceMs) break;
    const lateness = now - intended;
    if (lateness > maxLatenessMs) {
      ctx.countDropped(intended);
    } else {
      if (lateness > lateToleranceMs) ctx.countLate(intended);
      void ctx.fire(intended, arrival.item);
    }
    arrival = schedule.next();
  }
  // What the schedule still held when the duration ended (or the run aborted) was never sent.
  let missed = 0;
  for (; arrival !== null; arrival = schedule.next()) missed++;
  ctx.countMissed(missed);
}
