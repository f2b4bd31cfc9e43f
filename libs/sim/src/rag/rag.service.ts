import type { SimConfig } from '../config/sim-config';
import type { FaultController } from '../faults/fault.controller';
import { cosine, embedText, normalise } from '../text/embedding.util';
import { Prng } from '../text/prng.util';
import { ApiError } from '../http/http.util';
import { VectorIndex, type IndexDistance, type IndexHit, type PointId } from './vector.index';

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
  /** The `/rag/*` index, also the Qdrant collection named `config.collection`. */
  readonly index: VectorIndex;
  private readonly collections = new Map<string, VectorIndex>();
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
    this.index = new VectorIndex(config.dimensions, 'Cosine', Math.max(1024, config.initialIndexSize));
    this.jitter = new Prng(seed ^ 0x2545f491);
    const rng = new Prng(seed);
    const v = new Float32Array(config.dimensions);
    for (let i = 0; i < config.initialIndexSize; i++) {
      for (let d = 0; d < v.length; d++) v[d] = rng.next() * 2 - 1;
      this.index.put(`doc-${i}`, v, null);
    }
    this.collections.set(config.collection, this.index);
  }

  get size(): number {
    return this.index.size;
  }

  /** Qdrant collections by name; `config.collection` is the pre-loaded `/rag/*` index. */
  collection(name: string): VectorIndex | undefined {
    return this.collections.get(name);
  }

  collectionNames(): string[] {
    return [...this.collections.keys()];
  }

  /** False when the name is taken. New collections start empty, as Qdrant's do. */
  createCollection(name: string, dimensions: number, distance: IndexDistance): boolean {
    if (this.collections.has(name)) return false;
    this.collections.set(name, new VectorIndex(dimensions, distance));
    return true;
  }

  deleteCollection(name: string): boolean {
    return this.collections.delete(name);
  }

  private vectorOf(item: { vector?: number[] | null; text?: string | null }, what: string): Float32Array {
    const dims = this.config.dimensions;
    if (item.vector) {
      if (item.vector.length !== dims)
        throw new ApiError(
          400,
          `${what}: vector has ${item.vector.length} dimensions, the index has ${dims}.`,
          'invalid_request_error',
          'vector',
        );
      return normalise(Float32Array.from(item.vector));
    }
    if (typeof item.text === 'string') return embedText(item.text, dims, this.seed);
    throw new ApiError(400, `${what}: give either 'vector' or 'text'.`, 'invalid_request_error', 'vector');
  }

  private sleep(modelMs: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, modelMs * this.timeScale));
  }

  /** Index layer (`/rag/index/upsert`): texts are embedded here, vectors taken as given. */
  async upsert(items: UpsertItem[]): Promise<{ upserted: number; indexSize: number; costMs: number }> {
    const points = items.map((item) => ({
      id: item.id,
      vector: this.vectorOf(item, `item '${item.id}'`),
      payload: item.text === undefined ? null : { text: item.text },
    }));
    const costMs = await this.upsertInto(this.index, points);
    return { upserted: items.length, indexSize: this.size, costMs };
  }

  /**
   * Upserts into any index and sleeps its cost. Cost per vector (model us) =
   * upsertBaseUsPerVector x (1 + size / upsertSlowdownAt), size counted as each vector lands.
   * Returns the cost in model ms.
   */
  async upsertInto(
    index: VectorIndex,
    points: { id: PointId; vector: Float32Array; payload: Record<string, unknown> | null }[],
  ): Promise<number> {
    let costUs = 0;
    for (const point of points) {
      costUs += this.config.upsertBaseUsPerVector * (1 + index.size / this.config.upsertSlowdownAt);
      index.put(point.id, point.vector, point.payload);
    }
    await this.sleep(costUs / 1000);
    return costUs / 1000;
  }

  /** Retrieve layer (`/rag/retrieve`) over the default index. */
  async retrieve(
    query: { vector?: number[] | null; text?: string | null },
    k: number,
  ): Promise<{ items: RetrievedItem[]; serviceMs: number; queuedMs: number }> {
    const q = this.vectorOf(query, 'query');
    const result = await this.searchIn(this.index, q, k);
    const items = result.hits.map((hit) => {
      const text = this.index.payloads[hit.at]?.text;
      return {
        id: String(this.index.ids[hit.at]),
        score: hit.score,
        text: typeof text === 'string' ? text : null,
      };
    });
    return { items, serviceMs: result.serviceMs, queuedMs: result.queuedMs };
  }

  /**
   * Top-k over any index. At most `retrieveWorkers` searches run at once over all indexes (one
   * search pool, as a Qdrant node has), the rest queue. Service time (model ms) =
   * (retrieveBaseMs + retrievePerKMs x k + retrievePerKVectorsMs x size / 1000) x
   * lognormal(0, retrieveJitterSigma), with k counting the skipped `offset` too. The wall time of
   * the real scan counts toward it (slept: serviceMs x timeScale - scan ms, at least 0).
   */
  async searchIn(
    index: VectorIndex,
    q: Float32Array,
    k: number,
    offset = 0,
    minScore = -Infinity,
  ): Promise<{ hits: IndexHit[]; serviceMs: number; queuedMs: number }> {
    const queuedAt = Date.now();
    if (this.retrieveInFlight >= this.config.retrieveWorkers)
      await new Promise<void>((resolve) => this.retrieveQueue.push(resolve));
    this.retrieveInFlight++;
    const queuedMs = Date.now() - queuedAt;
    try {
      const c = this.config;
      const serviceMs =
        (c.retrieveBaseMs + c.retrievePerKMs * (k + offset) + (c.retrievePerKVectorsMs * index.size) / 1000) *
        Math.exp(this.jitter.normal(0, c.retrieveJitterSigma));
      const computeStarted = performance.now();
      const hits = index.topK(q, k, offset, minScore);
      // The real brute-force scan (~1.4 ms at 10,000 x 64 on this machine) is part of the service
      // time, not added to it: the slot is held for the modelled time whatever the CPU.
      const computeMs = performance.now() - computeStarted;
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, serviceMs * this.timeScale - computeMs)),
      );
      return { hits, serviceMs, queuedMs };
    } finally {
      this.retrieveInFlight--;
      this.retrieveQueue.shift()?.();
    }
  }

  /** Rerank layer: try-acquire one of `rerankMaxConcurrency` slots or fail fast with 503. */
  async rerank(
    query: string,
    documents: string[],
    topN: number,
  ): Promise<{ results: { index: number; relevance_score: number }[]; inUse: number }> {
    const cap = this.config.rerankMaxConcurrency;
    const phantom = this.faults.get('reranker_saturation')?.inUse ?? 0;
    const inUse = Math.min(cap, this.rerankInUse + phantom);
    if (inUse >= cap)
      throw new ApiError(503, `reranker busy: ${inUse}/${cap} in use`, 'server_error', null, 'reranker_busy');
    this.rerankInUse++;
    try {
      const q = embedText(query, this.config.dimensions, this.seed);
      const scored = documents.map((doc, index) => ({
        index,
        relevance_score: (cosine(q, embedText(doc, this.config.dimensions, this.seed)) + 1) / 2,
      }));
      scored.sort((a, b) => b.relevance_score - a.relevance_score);
      await this.sleep(this.config.rerankBaseMs + this.config.rerankPerDocMs * documents.length);
      return { results: scored.slice(0, topN), inUse: inUse + 1 };
    } finally {
      this.rerankInUse--;
    }
  }
}
