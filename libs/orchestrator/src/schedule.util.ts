export interface ScheduleState {
  readonly mode: 'interval' | 'always-on';
  readonly intervalMs: number;
  readonly nextRunAt: number;
}

export type ScheduleDecision = { readonly start: boolean; readonly nextRunAt: number; readonly why: string };

/**
 * What a due schedule does now. Never overlaps a campaign with itself: while any run of the
 * campaign is pending or running, nothing starts (an interval slot is skipped, an always-on
 * schedule waits). `lastEndedAt` is when the campaign's latest run ended (null: none yet).
 */
export function decideSchedule(
  schedule: ScheduleState,
  campaignBusy: boolean,
  lastEndedAt: number | null,
  now: number,
): ScheduleDecision {
  if (schedule.mode === 'interval') {
    const next = nextSlotAfter(schedule.nextRunAt, schedule.intervalMs, now);
    if (campaignBusy) return { start: false, nextRunAt: next, why: 'campaign still running: slot skipped' };
    return { start: true, nextRunAt: next, why: 'interval slot' };
  }
  if (campaignBusy) return { start: false, nextRunAt: schedule.nextRunAt, why: 'campaign still running' };
  if (lastEndedAt !== null && now < lastEndedAt + schedule.intervalMs) {
    return { start: false, nextRunAt: lastEndedAt + schedule.intervalMs, why: 'gap after the previous run' };
  }
  return { start: true, nextRunAt: now, why: 'always-on: previous run ended' };
}

/** The first slot `first + k * interval` (k >= 1) after `now`. */
export function nextSlotAfter(first: number, intervalMs: number, now: number): number {
  if (intervalMs <= 0) return now;
  const k = Math.max(1, Math.floor((now - first) / intervalMs) + 1);
  return first + k * intervalMs;
}
