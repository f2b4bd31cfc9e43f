/** A watch's episode opened (the share crossed its bound) or cleared (it fell back). */
export interface EpisodeChange {
  readonly kind: 'opened' | 'cleared';
  /** End time (epoch ms) of the sample that changed it. */
  readonly at: number;
  readonly share: number;
  readonly hits: number;
  readonly samples: number;
  /** The share that opens the episode now (the floor, or the baseline plus the rise). */
  readonly bound: number;
  /** The run's own share over its first samples, when the watch has a baseline. */
  readonly baselineShare: number | null;
}

export interface ShareEpisodeOptions {
  /** Sliding window over the samples' end times (ms). */
  readonly windowMs: number;
  /** Samples in the window needed for a verdict. */
  readonly minSamples: number;
  /** Share of hits that opens an episode, at least. */
  readonly openShare: number;
  /**
   * With a baseline: the run's first `samples` set its own share, and an episode opens only at
   * that share plus `rise` (a target whose answers always fail some check is not a new fault).
   */
  readonly baseline?: { readonly samples: number; readonly rise: number };
}

/**
 * The share of hits (refused calls, failed checks) among the samples of a sliding window, as
 * episodes: `opened` once when the share reaches its bound with enough samples, `cleared` once
 * when it falls under half the bound. Samples are expected in rough time order; one owner.
 */
export class ShareEpisodeWatch {
  private readonly window: { at: number; hit: boolean }[] = [];
  private hits = 0;
  private open = false;
  private baselineSeen = 0;
  private baselineHits = 0;

  constructor(private readonly options: ShareEpisodeOptions) {}

  get isOpen(): boolean {
    return this.open;
  }

  observe(at: number, hit: boolean): EpisodeChange | null {
    const { windowMs, minSamples, openShare, baseline } = this.options;
    if (baseline && this.baselineSeen < baseline.samples) {
      this.baselineSeen++;
      if (hit) this.baselineHits++;
    }
    this.window.push({ at, hit });
    if (hit) this.hits++;
    while (this.window.length && this.window[0].at <= at - windowMs) {
      if (this.window.shift()!.hit) this.hits--;
    }
    const baselineShare = baseline ? this.baselineHits / Math.max(1, this.baselineSeen) : null;
    // Without its baseline yet, the watch judges nothing.
    if (baseline && this.baselineSeen < baseline.samples) return null;
    if (this.window.length < minSamples) return null;
    const share = this.hits / this.window.length;
    const bound = Math.max(openShare, baselineShare === null ? 0 : baselineShare + baseline!.rise);
    const change = (kind: EpisodeChange['kind']): EpisodeChange => ({
      kind,
      at,
      share,
      hits: this.hits,
      samples: this.window.length,
      bound,
      baselineShare,
    });
    if (!this.open && share >= bound) {
      this.open = true;
      return change('opened');
    }
    if (this.open && share < bound / 2) {
      this.open = false;
      return change('cleared');
    }
    return null;
  }
}

/**
 * Reranker busy (spec, RAG rerank layer): the reranker's hard concurrency cap is a semaphore of
 * 32 whose try-acquire fails fast with "reranker busy: n/32 in use". Returns n and the cap from a
 * record's error text, or null.
 */
export function rerankerBusyOf(errorMessage: string | undefined): { inUse: number; cap: number } | null {
  const m = /reranker busy: (\d+)\/(\d+) in use/i.exec(errorMessage ?? '');
  return m ? { inUse: Number(m[1]), cap: Number(m[2]) } : null;
}

/** The watches' settings, each with its provenance. */
export const EPISODE_WATCHES = {
  /**
   * Reranker busy: a fifth of the requests of the last 2 s refused busy, 5 at least (the same
   * share the root cause names reranker-saturation at; derived on the simulator's
   * reranker_saturation fault).
   */
  rerankerBusy: { windowMs: 2_000, minSamples: 5, openShare: 0.2 },
  /**
   * Semantic failure rate: the share of judged responses failing a semantic check over 10 s.
   * Floor 8 %: the spec's business health bound (agent task success > 92 %). Judged against the
   * run's own first 20 responses plus 0.3 (derived on the simulator: its default answers already
   * carry a hallucination-risk span in ~25 % of responses).
   */
  semanticFailureRate: {
    windowMs: 10_000,
    minSamples: 20,
    openShare: 0.08,
    baseline: { samples: 20, rise: 0.3 },
  },
} as const satisfies Record<string, ShareEpisodeOptions>;
