import type { SimConfig } from '../config/sim-config';
import type { FaultController } from '../faults/fault.controller';
import { cosine, embedText, normalise } from '../text/embedding.util';
import { Prng } from '../text/prng.util';
import { ApiError } from '../http/http.util';

type RagConfig = SimConfig['rag'];

export interface UpsertItem {
  id: string;
  vector?: number[];
  text?: string;
}

export interface RetrievedItem {
  id: string;
  score: number;
  text: string | null;
}

/**
 * The three RAG layers, each reachable on its own (the spec's isolation testing):
 * index (upsert), retrieve (top-k), rerank (cross-encoder stand-in behind a hard cap).
 * Latency formulas are in SimConfig['rag']; service times are slept (x timeScale), while the
 * top-k itself is computed for real by brute force over the in-memory index.
 */
export class RagService {
  private readonly ids: string[] = [];
  private readonly texts: (string | null)[] = [];
  private vectors: Float32Array;
  private readonly position = new Map<string, number>();
  private retrieveInFlight = 0;
  private readonly retrieveQueue: (() => void)[] = [];
  private rerankInUse = 0;
  private readonly jitter: Prng;

  constructor(
    private readonly config: RagConfig,
    private readonly seed: number,
    private readonly timeScale: number,
    private readonly faults: FaultController,
  ) {
    this.vectors = new Float32Array(Math.max(1024, config.initialIndexSize) * config.dimensions);
    this.jitter = new Prng(seed ^ 0x2545f491);
    const rng = new Prng(seed);
    const v = new Float32Array(config.dimensions);
    for (let i = 0; i < config.initialIndexSize; i++) {
      for (let d = 0; d < v.length; d++) v[d] = rng.next() * 2 - 1;
      this.put(`doc-${i}`, normalise(v), null);
    }
  }

  get size(): number {
    return this.ids.length;
  }

  private put(id: string, vector: Float32Array, text: string | null): void {
    const dims = this.config.dimensions;
    let at = this.position.get(id);
    if (at === undefined) {
      at = this.ids.length;
      if ((at + 1) * dims > this.vectors.length) {
        const grown = new Float32Array(this.vectors.length * 2);
        grown.set(this.vectors);
        this.vectors = grown;
      }
      this.ids.push(id);
      this.texts.push(text);
      this.position.set(id, at);
    } else {
      this.texts[at] = text;
    }
    this.vectors.set(vector, at * dims);
  }

  private vectorOf(item: { vector?: number[] | null; text?: string | null }, what: string): Float32Array {
    const dims = this.config.dimensions;
    if (item.vector) {
      if (item.vector.length !== dims) throw new ApiError(400, `${what}: vector has ${item.vector.length} dimensions, the index has ${dims}.`, 'invalid_request_error', 'vector');
      return normalise(Float32Array.from(item.vector));
    }
    if (typeof item.text === 'string') return embedText(item.text, dims, this.seed);
    throw new ApiError(400, `${what}: give either 'vector' or 'text'.`, 'invalid_request_error', 'vector');
  }

  private sleep(modelMs: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, modelMs * this.timeScale));
  }

  /** Index layer. Cost per vector (model us) = upsertBaseUsPerVector x (1 + size / upsertSlowdownAt). */
  async upsert(items: UpsertItem[]): Promise<{ upserted: number; indexSize: number; costMs: number }> {
    let costUs = 0;
    for (const item of items) {
      const vector = this.vectorOf(item, `item '${item.id}'`);
      costUs += this.config.upsertBaseUsPerVector * (1 + this.size / this.config.upsertSlowdownAt);
      this.put(item.id, vector, item.text ?? null);
    }
    await this.sleep(costUs / 1000);
    return { upserted: items.length, indexSize: this.size, costMs: costUs / 1000 };
  }

  /**
   * Retrieve layer: at most `retrieveWorkers` queries run at once, the rest queue. Service time
   * (model ms) = (retrieveBaseMs + retrievePerKMs x k + retrievePerKVectorsMs x size / 1000) x
   * lognormal(0, retrieveJitterSigma).
   */
  async retrieve(query: { vector?: number[] | null; text?: string | null }, k: number): Promise<{ items: RetrievedItem[]; serviceMs: number; queuedMs: number }> {
    const q = this.vectorOf(query, 'query');
    const queuedAt = Date.now();
    if (this.retrieveInFlight >= this.config.retrieveWorkers) await new Promise<void>((resolve) => this.retrieveQueue.push(resolve));
    this.retrieveInFlight++;
    const queuedMs = Date.now() - queuedAt;
    try {
      const c = this.config;
      const serviceMs = (c.retrieveBaseMs + c.retrievePerKMs * k + (c.retrievePerKVectorsMs * this.size) / 1000) * Math.exp(this.jitter.normal(0, c.retrieveJitterSigma));
      const items = this.topK(q, k);
      await this.sleep(serviceMs);
      return { items, serviceMs, queuedMs };
    } finally {
      this.retrieveInFlight--;
      this.retrieveQueue.shift()?.();
    }
  }

  private topK(q: Float32Array, k: number): RetrievedItem[] {
    const dims = this.config.dimensions;
    const best: { at: number; score: number }[] = [];
    for (let at = 0; at < this.ids.length; at++) {
      let dot = 0;
      const base = at * dims;
      for (let d = 0; d < dims; d++) dot += q[d] * this.vectors[base + d];
      if (best.length < k) {
        best.push({ at, score: dot });
        if (best.length === k) best.sort((a, b) => b.score - a.score);
      } else if (dot > best[k - 1].score) {
        let i = k - 1;
        while (i > 0 && best[i - 1].score < dot) i--;
        best.splice(i, 0, { at, score: dot });
        best.pop();
      }
    }
    best.sort((a, b) => b.score - a.score);
    return best.map((b) => ({ id: this.ids[b.at], score: b.score, text: this.texts[b.at] }));
  }

  /** Rerank layer: try-acquire one of `rerankMaxConcurrency` slots or fail fast with 503. */
  async rerank(query: string, documents: string[], topN: number): Promise<{ results: { index: number; relevance_score: number }[]; inUse: number }> {
    const cap = this.config.rerankMaxConcurrency;
    const phantom = this.faults.get('reranker_saturation')?.inUse ?? 0;
    const inUse = Math.min(cap, this.rerankInUse + phantom);
    if (inUse >= cap) throw new ApiError(503, `reranker busy: ${inUse}/${cap} in use`, 'server_error', null, 'reranker_busy');
    this.rerankInUse++;
    try {
      const q = embedText(query, this.config.dimensions, this.seed);
      const scored = documents.map((doc, index) => ({ index, relevance_score: (cosine(q, embedText(doc, this.config.dimensions, this.seed)) + 1) / 2 }));
      scored.sort((a, b) => b.relevance_score - a.relevance_score);
      await this.sleep(this.config.rerankBaseMs + this.config.rerankPerDocMs * documents.length);
      return { results: scored.slice(0, topN), inUse: inUse + 1 };
    } finally {
      this.rerankInUse--;
    }
  }
}
