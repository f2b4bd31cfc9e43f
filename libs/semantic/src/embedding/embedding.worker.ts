/**
 * Worker-thread entry of `WorkerEmbedder`: loads the model named in `workerData` (USE-lite on
 * TF.js WASM, or an ONNX sentence embedder on onnxruntime-node), says `ready`, then embeds one
 * request at a time, in the model's batches, and transfers the vectors back. Everything here may
 * block this thread for as long as the model takes; that is what the thread is for.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { OnnxSentenceEmbedder } from '../onnx/onnx-sentence.embedder';
import type { Embedder } from './embedder';
import type { EmbedRequest, EmbeddingWorkerData, EmbeddingWorkerReply } from './embedding-worker.protocol';
import { UseLiteEmbedder } from './use-lite.embedder';

const port = parentPort;
if (!port) throw new Error('embedding.worker runs only as a worker thread');
const data = workerData as EmbeddingWorkerData;
const reply = (message: EmbeddingWorkerReply, transfer: ArrayBuffer[] = []) =>
  port.postMessage(message, transfer);

async function load(): Promise<Embedder> {
  if (data.model.kind === 'onnx')
    return OnnxSentenceEmbedder.fromFolder(data.model.folder, { batchSize: data.batchSize });
  const embedder = new UseLiteEmbedder(data.batchSize);
  // USE-lite loads on its first call: embed once so `ready` means the model is in memory.
  await embedder.embed(['warm-up']);
  return embedder;
}

/** A vector that owns its whole buffer, so transferring it moves exactly that vector. */
function owning(vector: Float32Array): Float32Array {
  return vector.byteOffset === 0 && vector.byteLength === vector.buffer.byteLength
    ? vector
    : Float32Array.from(vector);
}

const started = performance.now();
load().then(
  (embedder) => {
    reply({
      type: 'ready',
      name: embedder.name,
      dimensions: embedder.dimensions,
      loadMs: performance.now() - started,
    });
    let queue: Promise<void> = Promise.resolve();
    port.on('message', (request: EmbedRequest) => {
      queue = queue.then(async () => {
        const t0 = performance.now();
        try {
          const vectors = (await embedder.embed(request.texts)).map(owning);
          reply(
            { type: 'vectors', id: request.id, vectors, embedMs: performance.now() - t0 },
            vectors.map((v) => v.buffer as ArrayBuffer),
          );
        } catch (error) {
          reply({
            type: 'embed-failed',
            id: request.id,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      });
    });
  },
  (error: unknown) =>
    reply({ type: 'load-failed', error: error instanceof Error ? error.message : String(error) }),
);
