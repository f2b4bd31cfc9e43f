import type { LoadProfile } from '@fathom/contracts';
import type { PhaseTag } from '../measure/phased.recorder';
import { constantRateSchedule, type ArrivalSchedule } from '../profile/arrival.schedule';
import { shareOf } from '../profile/shard-share.util';
import { SeededRandom, deriveSeed } from '../random/seeded-random';

type SweepProfile = Extract<LoadProfile, { type: 'sweep' }>;
export type StepTag = Omit<PhaseTag, 'segment'>;

/** What the sweep needs of the engine (k6 style: an executor over a narrow context). */
export interface SweepContext {
  readonly stopped: boolean;
  /** Requests sent so far by the shard. */
  sent(): number;
  /** Starts step `tag`, running from `startMono` to `endMono` (its warm-up and cool-down apply). */
  beginStep(tag: StepTag, startMono: number, endMono: number): void;
  runClosed(users: number, endMono: number, random: SeededRandom): Promise<void>;
  runOpen(schedule: ArrivalSchedule, startMono: number, endMono: number): Promise<void>;
  /** Resolves when nothing is in flight (each step's requests end before the next step starts). */
  drained(): Promise<void>;
}

/** The rates (req/s of this shard) a rate sweep ran, or the users of a concurrency sweep. */
export interface SweepResult {
  synchronousRate: number;
  throughputRate: number;
  rates: number[];
  concurrencies?: number[];
}

/**
 * GuideLLM's sweep over durationMs cut in equal steps: synchronous (one user), throughput (all
 * the shard's users), then `rates` constant rates evenly between the two measured rates; or,
 * with `concurrencies`, one closed-model step per number of users (the campaign's, shared among
 * shards). Every step is tagged (windows, records) and drained before the next starts, so each
 * step's figures are its own requests'.
 */
export async function runSweep(
  p: SweepProfile,
  ctx: SweepContext,
  run: { durationMs: number; maxInFlight: number; shard: { index: number; count: number } },
): Promise<SweepResult> {
  const random = new SeededRandom(deriveSeed(p.seed, run.shard.index));
  if (p.concurrencies) {
    const stepMs = run.durationMs / p.concurrencies.length;
    const users = p.concurrencies.map((c) => Math.max(1, shareOf(c, run.shard)));
    for (let i = 0; i < users.length && !ctx.stopped; i++) {
      const start = performance.now();
      ctx.beginStep({ index: i, kind: 'concurrency', concurrency: users[i] }, start, start + stepMs);
      await ctx.runClosed(users[i], start + stepMs, random);
      await ctx.drained();
    }
    return { synchronousRate: 0, throughputRate: 0, rates: [], concurrencies: users };
  }
  const stepMs = run.durationMs / (p.rates + 2);
  const closedStep = async (index: number, users: number, kind: 'synchronous' | 'throughput') => {
    const before = ctx.sent();
    const start = performance.now();
    ctx.beginStep({ index, kind, concurrency: users }, start, start + stepMs);
    await ctx.runClosed(users, start + stepMs, random);
    await ctx.drained();
    return ((ctx.sent() - before) * 1000) / Math.max(1, performance.now() - start);
  };
  const synchronousRate = await closedStep(0, 1, 'synchronous');
  const throughputRate = ctx.stopped ? 0 : await closedStep(1, run.maxInFlight, 'throughput');
  const rates = Array.from(
    { length: p.rates },
    (_, i) => synchronousRate + ((throughputRate - synchronousRate) * (i + 1)) / (p.rates + 1),
  );
  for (let i = 0; i < rates.length; i++) {
    const rate = rates[i];
    if (ctx.stopped || rate <= 0) break;
    const start = performance.now();
    ctx.beginStep({ index: i + 2, kind: 'rate', ratePerSec: rate }, start, start + stepMs);
    await ctx.runOpen(constantRateSchedule(rate, stepMs, { index: 0, count: 1 }), start, start + stepMs);
    await ctx.drained();
  }
  return { synchronousRate, throughputRate, rates };
}
