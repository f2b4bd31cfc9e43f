/**
 * Messages between `WorkerEmbedder` (main thread) and `embedding.worker` (its worker thread).
 * Vectors travel as transferred ArrayBuffers: each one is owned by exactly one side at a time.
 */

/** Which model the worker loads: USE-lite (offline, in node_modules) or a sentence-transformers ONNX folder. */
export type EmbeddingModelSpec =
  { readonly kind: 'use-lite' } | { readonly kind: 'onnx'; readonly folder: string };

export interface EmbeddingWorkerData {
  readonly model: EmbeddingModelSpec;
  /** Texts per model call inside the worker. */
  readonly batchSize: number;
}

export interface EmbedRequest {
  readonly type: 'embed';
  readonly id: number;
  readonly texts: readonly string[];
}

export type EmbeddingWorkerReply =
  | { readonly type: 'ready'; readonly name: string; readonly dimensions: number; readonly loadMs: number }
  | { readonly type: 'load-failed'; readonly error: string }
  | {
      readonly type: 'vectors';
      readonly id: number;
      readonly vectors: Float32Array[];
      readonly embedMs: number;
    }
  | { readonly type: 'embed-failed'; readonly id: number; readonly error: string };

/** FATHOM_SEMANTIC_EMBEDDER's values other than `off`: `use-lite` (default) or `onnx:<folder>`. */
export function embeddingModelFromChoice(choice: string): EmbeddingModelSpec {
  if (choice === 'use-lite') return { kind: 'use-lite' };
  if (choice.startsWith('onnx:') && choice.length > 5) return { kind: 'onnx', folder: choice.slice(5) };
  throw new Error(`unknown embedder ${JSON.stringify(choice)}: expected use-lite, onnx:<folder> or off`);
}
