/**
 * The adaptive profile's control law: AIMD (additive increase, multiplicative decrease), the law
 * TCP uses to find a link's capacity without a model of it.
 *
 * Every interval the engine reports the P95 latency of the requests that finished in it and the
 * latest GPU memory reading. Then
 *   - over budget (P95 > p95BudgetMs, or GPU memory > gpuMemoryCeiling):
 *       c <- max(cMin, floor(c * beta))            (beta = decreaseFactor, e.g. 0.7)
 *   - otherwise, and the interval had samples:   c <- min(cMax, c + alpha)   (alpha = increaseStep)
 *   - no samples: c unchanged (no evidence either way).
 * GPU memory over the ceiling also shrinks the input-length mix: s <- max(0.1, s * beta), and
 * s recovers by +0.1 per interval under it (s = the share of each prompt kept, 1 = full).
 *
 * Near a server's knee (the concurrency beyond which queueing makes P95 climb) c saws between
 * about beta x knee and the knee: the mean sits just under the knee, and the time-averaged P95
 * just under the budget. The sawtooth is the price of needing no model of the server.
 */
export interface AimdSettings {
  p95BudgetMs: number;
  gpuMemoryCeiling?: number;
  initialConcurrency: number;
  minConcurrency: number;
  maxConcurrency: number;
  increaseStep: number;
  decreaseFactor: number;
}

export interface AimdStep {
  concurrency: number;
  inputScale: number;
  reason: 'increase' | 'latency-over-budget' | 'gpu-memory-over-ceiling' | 'hold';
}

export class AimdController {
  private concurrency: number;
  private scale = 1;

  constructor(private readonly settings: AimdSettings) {
    this.concurrency = Math.min(
      settings.maxConcurrency,
      Math.max(settings.minConcurrency, settings.initialConcurrency),
    );
  }

  get current(): { concurrency: number; inputScale: number } {
    return { concurrency: this.concurrency, inputScale: this.scale };
  }

  update(p95Ms: number | null, gpuMemoryUsed: number | null): AimdStep {
    const s = this.settings;
    const gpuOver =
      s.gpuMemoryCeiling !== undefined && gpuMemoryUsed !== null && gpuMemoryUsed > s.gpuMemoryCeiling;
    const latencyOver = p95Ms !== null && p95Ms > s.p95BudgetMs;
    let reason: AimdStep['reason'];
    if (gpuOver || latencyOver) {
      this.concurrency = Math.max(s.minConcurrency, Math.floor(this.concurrency * s.decreaseFactor));
      reason = gpuOver ? 'gpu-memory-over-ceiling' : 'latency-over-budget';
    } else if (p95Ms !== null) {
      this.concurrency = Math.min(s.maxConcurrency, this.concurrency + s.increaseStep);
      reason = 'increase';
    } else {
      reason = 'hold';
    }
    this.scale = gpuOver ? Math.max(0.1, this.scale * s.decreaseFactor) : Math.min(1, this.scale + 0.1);
    return { concurrency: this.concurrency, inputScale: this.scale, reason };
  }
}
