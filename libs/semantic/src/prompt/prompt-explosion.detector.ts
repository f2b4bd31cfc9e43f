import { nestedPromptDepth, type PromptDepth } from './prompt-depth.util';

// Spec, anomaly class 1: break the circuit when nested prompt depth > 5 or the token count is
// more than 3.0 x the baseline, the baseline being the sliding-window P95 of recent counts.
export const PROMPT_DEPTH_LIMIT = 5;
export const PROMPT_SURGE_RATIO_LIMIT = 3.0;

export interface PromptExplosionOptions {
  depthLimit?: number;
  surgeRatioLimit?: number;
  /** Recent prompts the P95 baseline is taken over. */
  window?: number;
  /** No surge verdict until this many prompts form the baseline (a P95 of 3 samples is noise). */
  minBaseline?: number;
}

export type PromptExplosionReason = 'depth' | 'surge';

export interface PromptExplosionVerdict {
  depth: PromptDepth;
  tokens: number;
  /** P95 of the window before this prompt; null while warming up. */
  baselineP95: number | null;
  /** tokens / baselineP95; null while warming up. */
  surgeRatio: number | null;
  reasons: PromptExplosionReason[];
  exploded: boolean;
}

/**
 * Watches the prompts of one scenario (or one stream of traffic) and judges each: nesting depth
 * and token-count surge against the P95 of the last `window` prompts. Prompts judged exploded
 * do not enter the baseline, so a sustained explosion keeps tripping instead of raising the bar
 * it is measured against. Keeps a sorted copy of the window: O(window) per prompt, no sort.
 * Single owner; not shared across threads.
 */
export class PromptExplosionDetector {
  private readonly options: Required<PromptExplosionOptions>;
  private readonly ring: number[] = [];
  private readonly sorted: number[] = [];
  private next = 0;

  constructor(options: PromptExplosionOptions = {}) {
    this.options = {
      depthLimit: options.depthLimit ?? PROMPT_DEPTH_LIMIT,
      surgeRatioLimit: options.surgeRatioLimit ?? PROMPT_SURGE_RATIO_LIMIT,
      window: options.window ?? 200,
      minBaseline: options.minBaseline ?? 20,
    };
  }

  /** Judges one prompt given its text and its token count (from usage, or a tokenizer). */
  observe(text: string, tokens: number): PromptExplosionVerdict {
    const depth = nestedPromptDepth(text);
    const baselineP95 = this.sorted.length >= this.options.minBaseline ? this.p95() : null;
    const surgeRatio = baselineP95 === null ? null : tokens / Math.max(1, baselineP95);
    const reasons: PromptExplosionReason[] = [];
    if (depth.depth > this.options.depthLimit) reasons.push('depth');
    if (surgeRatio !== null && surgeRatio > this.options.surgeRatioLimit) reasons.push('surge');
    if (!reasons.includes('surge')) this.add(tokens);
    return { depth, tokens, baselineP95, surgeRatio, reasons, exploded: reasons.length > 0 };
  }

  /** Nearest-rank P95 of the current window. */
  p95(): number {
    if (this.sorted.length === 0) return 0;
    return this.sorted[Math.min(this.sorted.length - 1, Math.ceil(0.95 * this.sorted.length) - 1)];
  }

  private add(tokens: number): void {
    if (this.ring.length < this.options.window) {
      this.ring.push(tokens);
    } else {
      const evicted = this.ring[this.next];
      this.ring[this.next] = tokens;
      this.next = (this.next + 1) % this.options.window;
      this.sorted.splice(lowerBound(this.sorted, evicted), 1);
    }
    this.sorted.splice(lowerBound(this.sorted, tokens), 0, tokens);
  }
}

function lowerBound(sorted: number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
