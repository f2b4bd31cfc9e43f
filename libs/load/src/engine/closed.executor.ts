import type { SeededRandom } from '../random/seeded-random';
import { nextMacrotask, type ExecutorContext } from './executor.context';

/** A gated virtual user waits this long before it asks the gate again (no busy loop). */
const GATED_BACKOFF_MS = 100;

export interface ClosedExecutorOptions {
  users: number;
  endMono: number;
  thinkTimeMs: number;
  thinkTimeJitterMs: number;
  random: SeededRandom;
  /** A user leaves after its current request once this says false (adaptive concurrency). */
  isActive?: (user: number) => boolean;
  /** Index of the first user (users are numbered for `isActive`). */
  firstUser?: number;
}

/** Closed model: `users` virtual users, each sending its next request when the last one ends. */
export async function runClosed(ctx: ExecutorContext, options: ClosedExecutorOptions): Promise<void> {
  const { users, endMono, thinkTimeMs, thinkTimeJitterMs, random } = options;
  const isActive = options.isActive ?? (() => true);
  const firstUser = options.firstUser ?? 0;
  const user = async (k: number) => {
    let intended = performance.now();
    while (!ctx.stopped && intended < endMono && isActive(k)) {
      const outcome = await ctx.fire(intended);
      if (outcome.gated) await ctx.sleeper.sleep(GATED_BACKOFF_MS);
      const think = thinkTimeMs + (thinkTimeJitterMs > 0 ? random.next() * thinkTimeJitterMs : 0);
      if (think > 0) await ctx.sleeper.sleep(think);
      intended = performance.now();
    }
  };
  // Users start one per macrotask: starting a request costs tens of us to ms (connecting,
  // building the request), and 200 of them in one task would hold every response byte that
  // arrives meanwhile, i.e. late timestamps for the first users' first tokens. Between two
  // starts the event loop polls the sockets.
  const running: Promise<void>[] = [];
  for (let i = 0; i < users && !ctx.stopped; i++) {
    if (i > 0) await nextMacrotask();
    running.push(user(firstUser + i));
  }
  await Promise.all(running);
}
