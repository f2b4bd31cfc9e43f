/**
 * Turns texts into fixed-length vectors. Implementations: `UseLiteEmbedder` (default, offline,
 * TensorFlow.js) and `OnnxSentenceEmbedder` (a sentence-transformers ONNX export in a folder).
 * Contract: `embed(texts)` resolves to one vector per text, in order, each `dimensions` long.
 */
export interface Embedder {
  readonly name: string;
  readonly dimensions: number;
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

export interface CachedEmbedderOptions {
  /** Entries kept (LRU). */
  capacity?: number;
  /** Entries expire with their time window (spec: LRU keyed by fingerprint + time window). */
  windowMs?: number;
  now?: () => number;
}

/**
 * LRU cache in front of an embedder, keyed by (fingerprint of the text, time window). The
 * window lets a long run re-embed after a model swap or a drift study without unbounded
 * staleness; within a window repeated prompts cost nothing. Only misses go to the embedder,
 * in one batch.
 */
export class CachedEmbedder implements Embedder {
  readonly name: string;
  readonly dimensions: number;
  private readonly cache = new Map<string, Float32Array>();
  private readonly capacity: number;
  private readonly windowMs: number;
  private readonly now: () => number;
  hits = 0;
  misses = 0;

  constructor(
    private readonly inner: Embedder,
    options: CachedEmbedderOptions = {},
  ) {
    this.name = `cached(${inner.name})`;
    this.dimensions = inner.dimensions;
    this.capacity = options.capacity ?? 10_000;
    this.windowMs = options.windowMs ?? 5 * 60_000;
    this.now = options.now ?? Date.now;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const window = Math.floor(this.now() / this.windowMs);
    const keys = texts.map((t) => `${window}:${fingerprint(t)}`);
    const out: (Float32Array | undefined)[] = keys.map((k) => {
      const hit = this.cache.get(k);
      if (hit !== undefined) {
        this.cache.delete(k);
        this.cache.set(k, hit); // most recently used goes last
      }
      return hit;
    });
    const missing = [...new Set(keys.filter((_, i) => out[i] === undefined))];
    this.hits += out.filter((v) => v !== undefined).length;
    this.misses += keys.length - out.filter((v) => v !== undefined).length;
    if (missing.length > 0) {
      const firstText = new Map<string, string>();
      keys.forEach((k, i) => firstText.has(k) || firstText.set(k, texts[i]));
      const vectors = await this.inner.embed(missing.map((k) => firstText.get(k) as string));
      missing.forEach((k, i) => {
        this.cache.set(k, vectors[i]);
        if (this.cache.size > this.capacity) this.cache.delete(this.cache.keys().next().value as string);
      });
      keys.forEach((k, i) => (out[i] ??= this.cache.get(k) ?? vectors[missing.indexOf(k)]));
    }
    return out as Float32Array[];
  }
}

/** 64-bit FNV-1a over UTF-16 code units, hex: a cache key, not a security hash. */
export function fingerprint(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
  }
  return (h1 >>> 0).toString(16).padStart(8, '0') + (h2 >>> 0).toString(16).padStart(8, '0');
}
