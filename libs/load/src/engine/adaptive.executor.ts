import type { LoadProfile } from '@fathom/contracts';
import { AimdController, type AimdStep } from '../adaptive/aimd.controller';
import { shareOf } from '../profile/shard-share.util';
import { SeededRandom, deriveSeed } from '../random/seeded-random';
import { runClosed } from './closed.executor';
import type { AdaptiveExecutorContext } from './executor.context';

export interface AdaptiveTrace {
  atMs: number;
  p95Ms: number | null;
  gpuMemoryUsed: number | null;
  concurrency: number;
  inputScale: number;
  reason: AimdStep['reason'];
}

/** The controller's last steps kept in the shard's result. */
const ADAPTIVE_TRACE_CAP = 600;

/** Adaptive (AIMD, see aimd.controller.ts): a closed model whose number of users the controller sets. */
export async function runAdaptive(
  ctx: AdaptiveExecutorContext,
  p: Extract<LoadProfile, { type: 'adaptive' }>,
  endMono: number,
  maxInFlight: number,
): Promise<AdaptiveTrace[]> {
  const controller = new AimdController({
    p95BudgetMs: p.p95BudgetMs,
    ...(p.gpuMemoryCeiling === undefined ? {} : { gpuMemoryCeiling: p.gpuMemoryCeiling }),
    initialConcurrency: Math.min(maxInFlight, Math.max(1, shareOf(p.initialConcurrency, ctx.shard))),
    minConcurrency: Math.min(maxInFlight, Math.max(1, shareOf(p.minConcurrency, ctx.shard))),
    maxConcurrency: maxInFlight,
    increaseStep: p.increaseStep,
    decreaseFactor: p.decreaseFactor,
  });
  const trace: AdaptiveTrace[] = [];
  const random = new SeededRandom(deriveSeed(p.seed, ctx.shard.index));
  const latency = ctx.tapLatency(p.metric);
  // Users by index: a user above the concurrency leaves after its current request; one that is
  // still finishing when the concurrency rises again simply stays (never two users per index).
  const alive = new Map<number, Promise<void>>();
  const isActive = (k: number) => k < controller.current.concurrency;
  const spawn = () => {
    for (let k = 0; k < controller.current.concurrency; k++) {
      if (alive.has(k)) continue;
      const user = runClosed(ctx, {
        users: 1,
        endMono,
        thinkTimeMs: 0,
        thinkTimeJitterMs: 0,
        random,
        isActive,
        firstUser: k,
      }).finally(() => alive.delete(k));
      alive.set(k, user);
    }
  };
  spawn();
  const t0 = performance.now();
  const interval = setInterval(() => {
    const p95Ms = latency.totalCount > 0 ? latency.getValueAtPercentile(95) / 1000 : null;
    latency.reset();
    const gpuMemoryUsed = ctx.readGpuMemory();
    const step = controller.update(p95Ms, gpuMemoryUsed);
    ctx.setInputScale(step.inputScale);
    trace.push({ atMs: performance.now() - t0, p95Ms, gpuMemoryUsed, ...step });
    if (trace.length > ADAPTIVE_TRACE_CAP) trace.shift();
    if (!ctx.stopped) spawn();
  }, p.intervalMs);
  await ctx.sleeper.sleep(endMono - performance.now());
  clearInterval(interval);
  await Promise.all(alive.values());
  ctx.untapLatency();
  return trace;
}
