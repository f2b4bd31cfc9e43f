import type { Worker } from 'node:worker_threads';
import { defaultRestartBackoffMs, startWorkerThread } from '../worker-thread.util';
import type { Embedder } from './embedder';
import type {
  EmbedRequest,
  EmbeddingModelSpec,
  EmbeddingWorkerData,
  EmbeddingWorkerReply,
} from './embedding-worker.protocol';

/** What went wrong with the worker; `restartInMs` null when it will not be restarted. */
export interface WorkerEmbedderFault {
  readonly kind: 'exited' | 'load-failed';
  readonly message: string;
  /** Deaths since the last worker that stayed up, this one included. */
  readonly consecutiveDeaths: number;
  readonly restartInMs: number | null;
}

export interface WorkerEmbedderOptions {
  readonly model: EmbeddingModelSpec;
  /** Texts per model call inside the worker (default 16). */
  readonly batchSize?: number;
  /** Delay before restart n (1-based): default 1 s doubling, at most 30 s. */
  readonly restartBackoffMs?: (consecutiveDeaths: number) => number;
  /** A worker that stayed ready this long resets the backoff (default 60 s). */
  readonly stableAfterMs?: number;
  readonly onFault?: (fault: WorkerEmbedderFault) => void;
  readonly onReady?: (ready: { name: string; dimensions: number; loadMs: number }) => void;
}

/** `embed` while no worker is ready (loading, dead and waiting to restart, or closed). */
export class EmbedderUnavailableError extends Error {
  constructor(reason: string) {
    super(`embedder unavailable: ${reason}`);
    this.name = 'EmbedderUnavailableError';
  }
}

/**
 * An `Embedder` whose model runs in a `worker_threads` Worker, so an embed call never holds the
 * caller's event loop: the texts go over in one message, the worker batches them through the
 * model and transfers the vectors back (not copied). The worker starts (and loads its model)
 * when this object is made. When it dies, calls in flight reject, `onFault` says so, and it is
 * restarted after a backoff; meanwhile `embed` rejects at once with `EmbedderUnavailableError`
 * (callers skip, never queue). A model that fails to load is reported once and not retried.
 * `name` and `dimensions` are known once `ready()` resolves.
 */
export class WorkerEmbedder implements Embedder {
  private worker: Worker | null = null;
  private readyNow = false;
  private closed = false;
  private permanentFailure: string | null = null;
  private identity: { name: string; dimensions: number } | null = null;
  private readonly pending = new Map<
    number,
    { resolve: (v: Float32Array[]) => void; reject: (e: Error) => void }
  >();
  private nextId = 1;
  private consecutiveDeaths = 0;
  private readySince = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  private firstReady: { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void };
  /** Workers started so far (1 + restarts). */
  starts = 0;
  /** Wall time the worker spent embedding, and the texts it embedded (for ms-per-text figures). */
  workerEmbedMs = 0;
  embeddedTexts = 0;

  constructor(private readonly options: WorkerEmbedderOptions) {
    let resolve!: () => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    promise.catch(() => undefined); // observed by ready(); a caller that never asks is not an unhandled rejection
    this.firstReady = { promise, resolve, reject };
    this.spawn();
  }

  get name(): string {
    return this.identity?.name ?? `worker(${this.options.model.kind})`;
  }

  get dimensions(): number {
    return this.identity?.dimensions ?? 0;
  }

  /** True while a worker with a loaded model is up. */
  get available(): boolean {
    return this.readyNow;
  }

  /** Resolves when the first worker has loaded its model; rejects if the model cannot load or `close()` came first. */
  ready(): Promise<void> {
    return this.firstReady.promise;
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    const worker = this.worker;
    if (!this.readyNow || !worker) {
      return Promise.reject(
        new EmbedderUnavailableError(
          this.closed
            ? 'closed'
            : (this.permanentFailure ?? (this.restartTimer ? 'worker restarting' : 'model loading')),
        ),
      );
    }
    const id = this.nextId++;
    return new Promise<Float32Array[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const request: EmbedRequest = { type: 'embed', id, texts: [...texts] };
      worker.postMessage(request);
    });
  }

  /**
   * Ends the current worker as a crash would (it is then restarted with backoff). For an
   * operator's kill switch and for tests of the restart path.
   */
  async killWorker(): Promise<void> {
    await this.worker?.terminate();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.readyNow = false;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    this.firstReady.reject(new EmbedderUnavailableError('closed'));
    const worker = this.worker;
    this.worker = null;
    this.failPending(new EmbedderUnavailableError('closed'));
    await worker?.terminate();
  }

  private spawn(): void {
    this.starts++;
    const workerData: EmbeddingWorkerData = {
      model: this.options.model,
      batchSize: this.options.batchSize ?? 16,
    };
    const worker = startWorkerThread(__dirname, 'embedding.worker', workerData);
    // A worker must not keep the process alive on its own (the service closes it at shutdown).
    worker.unref();
    this.worker = worker;
    worker.on('message', (reply: EmbeddingWorkerReply) => this.onReply(worker, reply));
    worker.on('error', (error) => this.onDeath(worker, `worker error: ${error.message}`));
    worker.on('exit', (code) => this.onDeath(worker, `worker exited with code ${code}`));
  }

  private onReply(worker: Worker, reply: EmbeddingWorkerReply): void {
    if (worker !== this.worker) return;
    switch (reply.type) {
      case 'ready':
        this.identity = { name: reply.name, dimensions: reply.dimensions };
        this.readyNow = true;
        this.readySince = Date.now();
        this.options.onReady?.({ name: reply.name, dimensions: reply.dimensions, loadMs: reply.loadMs });
        this.firstReady.resolve();
        return;
      case 'load-failed':
        this.permanentFailure = `model did not load: ${reply.error}`;
        this.firstReady.reject(new EmbedderUnavailableError(this.permanentFailure));
        this.worker = null;
        void worker.terminate();
        this.options.onFault?.({
          kind: 'load-failed',
          message: this.permanentFailure,
          consecutiveDeaths: this.consecutiveDeaths,
          restartInMs: null,
        });
        return;
      case 'vectors': {
        this.workerEmbedMs += reply.embedMs;
        this.embeddedTexts += reply.vectors.length;
        const p = this.pending.get(reply.id);
        this.pending.delete(reply.id);
        p?.resolve(reply.vectors);
        return;
      }
      case 'embed-failed': {
        const p = this.pending.get(reply.id);
        this.pending.delete(reply.id);
        p?.reject(new Error(`embedding failed in the worker: ${reply.error}`));
        return;
      }
    }
  }

  private onDeath(worker: Worker, why: string): void {
    // 'error' is followed by 'exit': one death, reported once.
    if (worker !== this.worker || this.closed) return;
    this.worker = null;
    this.readyNow = false;
    if (this.readySince > 0 && Date.now() - this.readySince >= (this.options.stableAfterMs ?? 60_000))
      this.consecutiveDeaths = 0;
    this.readySince = 0;
    this.consecutiveDeaths++;
    this.failPending(new EmbedderUnavailableError(why));
    const restartInMs = (this.options.restartBackoffMs ?? defaultRestartBackoffMs)(this.consecutiveDeaths);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (!this.closed) this.spawn();
    }, restartInMs);
    this.restartTimer.unref();
    this.options.onFault?.({
      kind: 'exited',
      message: why,
      consecutiveDeaths: this.consecutiveDeaths,
      restartInMs,
    });
  }

  private failPending(error: Error): void {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }
}
