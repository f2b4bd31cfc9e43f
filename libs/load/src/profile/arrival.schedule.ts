import type { LoadProfile } from '@fathom/contracts';
import { SeededRandom, deriveSeed } from '../random/seeded-random';
import type { ReplayArrival } from './replay.loader';
import type { PromptItem } from '../dataset/prompt-item';

/** One iteration an open-model profile asks for: its intended start, in ms from the shard start. */
export interface Arrival {
  atMs: number;
  /** Replay: what to send (the recorded prompt, a synthetic one of the recorded length, a path). */
  item?: PromptItem;
}

/**
 * The executor's plan for open-model profiles: intended start times, non-decreasing, computed
 * lazily (O(1) memory whatever the run length, except replay which holds its trace).
 */
export interface ArrivalSchedule {
  next(): Arrival | null;
}

type Shard = { index: number; count: number };

/**
 * Constant rate across the campaign: shard i of n takes arrivals i, i+n, i+2n... of the global
 * evenly spaced stream, so the shards together send exactly the campaign's rate, evenly spaced.
 */
export function constantRateSchedule(ratePerSec: number, durationMs: number, shard: Shard): ArrivalSchedule {
  const gapMs = 1000 / ratePerSec;
  let k = shard.index;
  return {
    next() {
      const atMs = k * gapMs;
      if (atMs >= durationMs) return null;
      k += shard.count;
      return { atMs };
    },
  };
}

/** Poisson arrivals: the sum of n independent Poisson streams of rate r/n is Poisson of rate r. */
export function poissonSchedule(
  ratePerSec: number,
  durationMs: number,
  shard: Shard,
  seed: number,
): ArrivalSchedule {
  const random = new SeededRandom(deriveSeed(seed, shard.index));
  const meanGapMs = (1000 * shard.count) / ratePerSec;
  let atMs = random.exponential(meanGapMs);
  return {
    next() {
      if (atMs >= durationMs) return null;
      const arrival = { atMs };
      atMs += random.exponential(meanGapMs);
      return arrival;
    },
  };
}

/**
 * Gamma-distributed gaps (vllm bench serve's `--burstiness`): shape `burstiness`, mean 1/rate,
 * so the rate holds whatever the burstiness; 1 is Poisson. Superposed gamma streams are not a
 * gamma stream, so every shard draws the one campaign-wide stream from the seed and keeps
 * arrivals i, i+n, i+2n... (as constant rate does): together they are exactly that process.
 */
export function gammaSchedule(
  ratePerSec: number,
  burstiness: number,
  durationMs: number,
  shard: Shard,
  seed: number,
): ArrivalSchedule {
  const random = new SeededRandom(deriveSeed(seed, 0));
  const meanGapMs = 1000 / ratePerSec;
  let atMs = 0;
  let k = -1;
  return {
    next() {
      do {
        atMs += random.gamma(burstiness, meanGapMs);
        k++;
      } while (k % shard.count !== shard.index);
      return atMs >= durationMs ? null : { atMs };
    },
  };
}

/**
 * Piecewise-linear rate (k6's ramping-arrival-rate). Arrival k is at the time t where the expected
 * count N(t) = integral of rate reaches k; within a stage N is quadratic in t, so we invert it
 * exactly. After the last stage its target rate is held until durationMs.
 */
export function rampingRateSchedule(
  startRatePerSec: number,
  stages: { durationMs: number; targetRatePerSec: number }[],
  durationMs: number,
  shard: Shard,
): ArrivalSchedule {
  const segments: { startMs: number; lengthMs: number; r0: number; r1: number; countAtStart: number }[] = [];
  let startMs = 0;
  let count = 0;
  let rate = startRatePerSec;
  for (const stage of stages) {
    segments.push({
      startMs,
      lengthMs: stage.durationMs,
      r0: rate,
      r1: stage.targetRatePerSec,
      countAtStart: count,
    });
    count += ((rate + stage.targetRatePerSec) / 2) * (stage.durationMs / 1000);
    startMs += stage.durationMs;
    rate = stage.targetRatePerSec;
  }
  segments.push({ startMs, lengthMs: Infinity, r0: rate, r1: rate, countAtStart: count });

  let k = shard.index;
  let segment = 0;
  return {
    next() {
      while (segment < segments.length) {
        const s = segments[segment];
        const c = k - s.countAtStart;
        const a = s.lengthMs === Infinity ? 0 : (s.r1 - s.r0) / (2 * s.lengthMs * 1000);
        const b = s.r0 / 1000;
        let tau: number;
        if (Math.abs(a) < 1e-15) tau = b > 0 ? c / b : Infinity;
        else {
          const disc = b * b + 4 * a * c;
          tau = disc < 0 ? Infinity : (-b + Math.sqrt(disc)) / (2 * a);
        }
        if (tau <= s.lengthMs) {
          const atMs = s.startMs + Math.max(0, tau);
          if (atMs >= durationMs) return null;
          k += shard.count;
          return { atMs };
        }
        segment++;
      }
      return null;
    },
  };
}

/**
 * Recorded arrivals, shared round-robin between shards, time-scaled by `speed`. `itemOf` builds
 * what each sends (absent: the scenario's next prompt), when the arrival is handed out.
 */
export function replaySchedule(
  arrivals: ReplayArrival[],
  speed: number,
  durationMs: number,
  shard: Shard,
  itemOf?: (arrival: ReplayArrival) => PromptItem,
): ArrivalSchedule {
  let k = shard.index;
  return {
    next() {
      if (k >= arrivals.length) return null;
      const recorded = arrivals[k];
      const atMs = recorded.offsetMs / speed;
      if (atMs >= durationMs) return null;
      k += shard.count;
      return itemOf ? { atMs, item: itemOf(recorded) } : { atMs };
    },
  };
}

/** The schedule of an open-model rate profile (not closed/sweep/adaptive, which the engine drives). */
export function scheduleFor(
  profile: Extract<LoadProfile, { type: 'constant-rate' | 'poisson' | 'gamma' | 'ramping-rate' }>,
  durationMs: number,
  shard: Shard,
): ArrivalSchedule {
  switch (profile.type) {
    case 'constant-rate':
      return constantRateSchedule(profile.ratePerSec, durationMs, shard);
    case 'poisson':
      return poissonSchedule(profile.ratePerSec, durationMs, shard, profile.seed);
    case 'gamma':
      return gammaSchedule(profile.ratePerSec, profile.burstiness, durationMs, shard, profile.seed);
    case 'ramping-rate':
      return rampingRateSchedule(profile.startRatePerSec, profile.stages, durationMs, shard);
  }
}
