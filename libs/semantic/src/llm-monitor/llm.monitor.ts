import { join } from 'node:path';
import { fingerprint } from '../embedding/embedder';
import { matchAnomalyRules, type AnomalyLabel, type Fragment } from './anomaly.rules';
import { OnnxAnomalyHead } from './anomaly-head';
import { fragmentFeatures } from './fragment-features.util';
import { WindowedLruCache } from './windowed-lru.cache';

/** The anomaly head that ships with Fathom (rebuilt by `npm run model:anomaly`). */
export const BUNDLED_ANOMALY_MODEL = join(__dirname, 'anomaly-head.onnx');

export interface LlmMonitorOptions {
  /**
   * Second threshold: the model flags a fragment the rules passed when 1 - P(normal) reaches
   * this. Our choice, precision first: at 0.9 the bundled head keeps held-out precision at 0.98
   * (recall 0.75; 0.85 at 0.8) and flags none of 300 simulator word-salad responses (9 at 0.8).
   */
  readonly modelThreshold?: number;
  /** Verdicts kept (LRU). */
  readonly cacheCapacity?: number;
  /** A verdict lives for one window of this length (ms); a model swap or drift shows within it. */
  readonly cacheWindowMs?: number;
  readonly now?: () => number;
}

export const DEFAULT_MODEL_THRESHOLD = 0.9;

export interface MonitorVerdict {
  readonly anomalous: boolean;
  /** `normal` when not anomalous; else the rule's class, or the model's most probable one. */
  readonly label: AnomalyLabel;
  /** Which threshold flagged it; null when clean. */
  readonly decidedBy: 'rule' | 'model' | null;
  readonly rule: string | null;
  /** 1 - P(normal); null when the model was not asked (a rule fired, rules-only, or it failed). */
  readonly modelConfidence: number | null;
  /** Served from the cache (same fragment, same window). */
  readonly cached: boolean;
}

export type MonitorModelState =
  | { readonly kind: 'model'; readonly source: string }
  | { readonly kind: 'rules-only'; readonly reason: string };

export interface LlmMonitorStats {
  fragments: number;
  anomalies: number;
  ruleHits: number;
  modelHits: number;
  /** Fragments the model scored (cache misses the rules passed). */
  modelScored: number;
  /** Batches whose model run failed (those fragments were judged by the rules only). */
  modelErrors: number;
  cacheHits: number;
}

/**
 * LLM-as-a-monitor: judges response and log fragments for semantic anomalies with a dual
 * threshold, rules first (a hit is an anomaly, the model is not asked), then the anomaly head's
 * confidence for what the rules passed. Verdicts are cached per (fingerprint of source + text,
 * time window). `assess` takes the fragments of one stream batch and runs the model once on
 * that batch's misses.
 *
 * States: `model` (rules + head) or `rules-only` (no model configured, or it failed to load:
 * `state.reason` says why). A model run that throws judges that batch by the rules, counts a
 * `modelErrors`, leaves those verdicts uncached, and never throws out of `assess`.
 */
export class LlmMonitor {
  readonly stats: LlmMonitorStats = {
    fragments: 0,
    anomalies: 0,
    ruleHits: 0,
    modelHits: 0,
    modelScored: 0,
    modelErrors: 0,
    cacheHits: 0,
  };
  lastModelError: string | null = null;
  private readonly cache: WindowedLruCache<MonitorVerdict>;
  private readonly threshold: number;

  private constructor(
    private readonly head: OnnxAnomalyHead | null,
    readonly state: MonitorModelState,
    options: LlmMonitorOptions,
  ) {
    this.threshold = options.modelThreshold ?? DEFAULT_MODEL_THRESHOLD;
    if (!(this.threshold > 0 && this.threshold <= 1))
      throw new Error(`LlmMonitor: modelThreshold ${this.threshold} must be in (0, 1]`);
    this.cache = new WindowedLruCache(
      options.cacheCapacity ?? 10_000,
      options.cacheWindowMs ?? 60_000,
      options.now,
    );
  }

  static rulesOnly(reason: string, options: LlmMonitorOptions = {}): LlmMonitor {
    return new LlmMonitor(null, { kind: 'rules-only', reason }, options);
  }

  /**
   * Loads the head (a path, or the ONNX bytes) and never throws for the model's sake: a model
   * that cannot be loaded, or breaks the input/output contract, yields a rules-only monitor
   * whose `state.reason` names the error.
   */
  static async load(model: string | Uint8Array, options: LlmMonitorOptions = {}): Promise<LlmMonitor> {
    const source = typeof model === 'string' ? model : `${model.length} bytes`;
    try {
      return new LlmMonitor(await OnnxAnomalyHead.load(model), { kind: 'model', source }, options);
    } catch (error) {
      return LlmMonitor.rulesOnly(`anomaly model ${source} failed to load: ${errorText(error)}`, options);
    }
  }

  get cacheStats(): { hits: number; misses: number; expired: number; size: number } {
    return {
      hits: this.cache.hits,
      misses: this.cache.misses,
      expired: this.cache.expired,
      size: this.cache.size,
    };
  }

  async assess(fragments: readonly Fragment[]): Promise<MonitorVerdict[]> {
    const out: MonitorVerdict[] = new Array(fragments.length);
    const keys: string[] = new Array(fragments.length);
    const toScore: number[] = [];
    for (let i = 0; i < fragments.length; i++) {
      const f = fragments[i];
      keys[i] = fingerprint(`${f.source}\u0000${f.text}`);
      const hit = this.cache.get(keys[i]);
      if (hit) {
        out[i] = { ...hit, cached: true };
        this.stats.cacheHits++;
        continue;
      }
      const rule = matchAnomalyRules(f);
      if (rule) {
        out[i] = {
          anomalous: true,
          label: rule.label,
          decidedBy: 'rule',
          rule: rule.rule,
          modelConfidence: null,
          cached: false,
        };
        this.cache.set(keys[i], out[i]);
      } else if (this.head === null || f.text.trim().length === 0) {
        out[i] = CLEAN;
        this.cache.set(keys[i], out[i]);
      } else toScore.push(i);
    }
    if (toScore.length > 0 && this.head !== null)
      await this.scoreWithModel(this.head, fragments, toScore, keys, out);
    this.stats.fragments += fragments.length;
    for (const v of out) {
      if (!v.anomalous) continue;
      this.stats.anomalies++;
      if (v.decidedBy === 'rule') this.stats.ruleHits++;
      else this.stats.modelHits++;
    }
    return out;
  }

  private async scoreWithModel(
    head: OnnxAnomalyHead,
    fragments: readonly Fragment[],
    indices: readonly number[],
    keys: readonly string[],
    out: MonitorVerdict[],
  ): Promise<void> {
    try {
      const scores = await head.score(indices.map((i) => fragmentFeatures(fragments[i].text)));
      this.stats.modelScored += indices.length;
      indices.forEach((i, n) => {
        const s = scores[n];
        const anomalous = s.confidence >= this.threshold;
        out[i] = {
          anomalous,
          label: anomalous ? s.label : 'normal',
          decidedBy: anomalous ? 'model' : null,
          rule: null,
          modelConfidence: s.confidence,
          cached: false,
        };
        this.cache.set(keys[i], out[i]);
      });
    } catch (error) {
      this.stats.modelErrors++;
      this.lastModelError = errorText(error);
      for (const i of indices) out[i] = CLEAN;
    }
  }

  async close(): Promise<void> {
    await this.head?.close();
  }
}

const CLEAN: MonitorVerdict = {
  anomalous: false,
  label: 'normal',
  decidedBy: null,
  rule: null,
  modelConfidence: null,
  cached: false,
};

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
