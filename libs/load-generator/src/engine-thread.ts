import type { Worker } from 'node:worker_threads';
import { startWorkerThread } from '@fathom/semantic';
import { runShard, type RunShardOptions, type ShardResult, type TelemetrySink } from '@fathom/load';
import type { EngineCommand, EngineReport, EngineWorkerData } from './engine-thread.protocol';
import type { ShardControls } from './shard-controls';

/**
 * What the service hands a shard host: `runShard`'s options without the in-process-only hooks, and
 * the shard's live controls (breakers, GPU memory), which reach the engine on either side.
 */
export type ShardHostOptions = Pick<
  RunShardOptions,
  'spec' | 'shard' | 'runId' | 'campaignId' | 'generatorId' | 'sink' | 'signal'
> & { controls?: ShardControls };

/**
 * One shard placed on a host (the engine, `runShard` from @fathom/load, on this event loop or a
 * worker thread), made ready before the shard is announced: `ready` resolves when it can
 * start at once (a worker has loaded its code; rejects when it cannot), `start` runs the shard to
 * its end. The service publishes shard-started between the two, so a worker's start-up is not
 * counted in the run's time and no record comes before the announcement.
 */
export interface HostedShard {
  readonly ready: Promise<void>;
  start(): Promise<ShardResult>;
}

/**
 * Where shards run: `InlineShardHost` (this event loop) or `ThreadShardHost` (a worker thread
 * each). Not the engine itself: the engine is `runShard` in @fathom/load, which both hosts call.
 */
export interface ShardHost {
  /** Prepares what the next shard would otherwise wait for (called at boot); resolves when done. */
  warm(): Promise<void>;
  run(options: ShardHostOptions): HostedShard;
  /** Ends what the host holds between shards (not the shards themselves). */
  close(): Promise<void>;
}

/** The engine on the caller's event loop, as before worker threads. */
export class InlineShardHost implements ShardHost {
  warm(): Promise<void> {
    return Promise.resolve();
  }

  run(options: ShardHostOptions): HostedShard {
    const { controls, ...shard } = options;
    const hooks = controls ? { gate: controls.gate, gpu: controls.gpu } : {};
    return { ready: Promise.resolve(), start: () => runShard({ ...shard, ...hooks }) };
  }

  async close(): Promise<void> {}
}

/** The engine thread `startEngineThreadEarly` made, until a `ThreadShardHost` adopts it. */
let early: EngineThread | null = null;

/**
 * Starts loading an engine thread before any host exists, for the first `ThreadShardHost` to
 * adopt as its spare: `startEmbedded` calls it before the store opens, so the thread loads the
 * engine's code on another core while the main thread starts PGlite and the services (it
 * started after them, and `fathom run` waited ~0.7 s for it). Unreferenced: a process that
 * never adopts it is not kept alive by it.
 */
export function startEngineThreadEarly(): void {
  early ??= new EngineThread();
}

/**
 * Each shard on its own worker thread (`EngineThread`). Loading the engine's code takes a worker
 * ~0.35 s built and ~0.45 s from source (module compilation, measured), so one spare worker is
 * kept loaded: a shard takes it and the next spare starts loading when that shard ends, not
 * beside it (on a one-core client, loading it took ~3 s of CPU from the run's first seconds).
 */
export class ThreadShardHost implements ShardHost {
  private spare: EngineThread | null = null;
  private closed = false;
  private spareTimer: NodeJS.Timeout | null = null;

  /**
   * @param spareAfterShardMs How long after a shard ends the next spare starts loading: not at
   *   once, because the run's end (the analyzer's last windows, the report) is then the busiest
   *   moment of the process, and a one-shot `fathom run` exits before it would use the spare
   *   (starting it at once cost ~0.7 s of CPU there, measured). A shard that comes sooner starts
   *   its own thread, as one with no spare always did.
   * @param newThread Makes an engine thread (tests count them).
   */
  constructor(
    private readonly spareAfterShardMs = 5_000,
    private readonly newThread: () => EngineThread = () => new EngineThread(),
  ) {}

  /**
   * Starts a spare unless one is there (at boot, so the first shard does not wait for it); the
   * first one is the thread `startEngineThreadEarly` started, when there is one.
   */
  warm(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.spare === null) {
      this.spare = early ?? this.newThread();
      early = null;
    }
    return this.spare.ready.catch(() => undefined);
  }

  run(options: ShardHostOptions): HostedShard {
    const spare = this.spare;
    this.spare = null;
    // A spare that died while idle is replaced (its death is no shard's failure).
    const thread = spare !== null && !spare.ended ? spare : this.newThread();
    if (spare !== null && spare !== thread) void spare.terminate();
    const bound = thread.bind(options);
    return {
      ready: bound.ready,
      start: () => bound.start().finally(() => this.warmLater()),
    };
  }

  private warmLater(): void {
    if (this.closed || this.spareTimer !== null) return;
    this.spareTimer = setTimeout(() => {
      this.spareTimer = null;
      void this.warm();
    }, this.spareAfterShardMs);
    this.spareTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.spareTimer !== null) clearTimeout(this.spareTimer);
    this.spareTimer = null;
    const spare = this.spare;
    this.spare = null;
    await spare?.terminate();
  }
}

/**
 * After an abort the engine cancels what is in flight and reports within a second; a worker
 * that has said nothing this long after is wedged and is ended, so the run never hangs on it.
 */
const ABORT_GRACE_MS = 10_000;

/**
 * One shard's engine on its own worker thread (`engine.worker`). The thread starts loading the
 * engine when this is made; `bind` gives it its shard, `start` runs it. Records and windows come
 * back in the engine's order and go to the shard's sink unchanged; `result` settles with the
 * engine's counts once every record it made has been handed over, or rejects with the reason
 * when the engine failed, the thread crashed or exited early, or it did not stop after an abort.
 * An abort of the shard's signal is forwarded (the engine stops its load within a second, as
 * inline).
 */
export class EngineThread implements HostedShard {
  /** Resolves on the worker's `ready`; rejects, as `result` does, when it dies first. */
  readonly ready: Promise<void>;
  readonly result: Promise<ShardResult>;
  private readonly worker: Worker;
  private shard: { data: EngineWorkerData; sink: TelemetrySink; signal: AbortSignal } | null = null;
  private settled = false;
  private abortTimer: NodeJS.Timeout | null = null;
  /** Calls into the sink that threw here (added to the engine's own `sinkErrors`). */
  private sinkErrors = 0;
  private resolve!: (result: ShardResult) => void;
  private reject!: (error: Error) => void;
  private readyNow!: () => void;
  private notReady!: (error: Error) => void;

  constructor() {
    this.result = new Promise<ShardResult>((res, rej) => ((this.resolve = res), (this.reject = rej)));
    this.ready = new Promise<void>((res, rej) => ((this.readyNow = res), (this.notReady = rej)));
    // A caller that awaits `ready` and sees it fail never asks for `result`, and the reverse.
    this.result.catch(() => undefined);
    this.ready.catch(() => undefined);
    this.worker = startWorkerThread(__dirname, 'engine.worker');
    // Idle (a spare), the thread must not keep the process alive; `bind` holds it.
    this.worker.unref();
    this.worker.on('message', this.onReport);
    this.worker.on('messageerror', (error) =>
      this.fail(`engine worker sent a message that could not be read: ${error.message}`),
    );
    this.worker.on('error', (error) => this.fail(`engine worker crashed: ${error.message}`));
    this.worker.on('exit', (code) =>
      this.fail(`engine worker exited (code ${code}) before reporting its result`),
    );
  }

  /** True once the thread reported its result or died. */
  get ended(): boolean {
    return this.settled;
  }

  /** Gives the thread its shard (once). */
  bind(options: ShardHostOptions): this {
    if (this.shard !== null) throw new Error('an engine thread runs one shard');
    const { spec, shard, runId, campaignId, generatorId, sink, signal, controls } = options;
    this.shard = { data: { spec, shard, runId, campaignId, generatorId }, sink, signal };
    this.worker.ref();
    if (controls) {
      // The state so far, then every change; the worker reads the latest before each request.
      this.command({ type: 'gate', gate: controls.gateState() });
      const reading = controls.gpu.read();
      if (reading !== null) this.command({ type: 'gpu', gpuMemoryUsed: reading });
      controls.onChange((change) =>
        this.command('gate' in change ? { type: 'gate', gate: change.gate } : { type: 'gpu', ...change }),
      );
    }
    if (signal.aborted) this.onAbort();
    else signal.addEventListener('abort', this.onAbort, { once: true });
    return this;
  }

  /** Runs the bound shard (once `ready`); resolves with its counts after its last record was handed over. */
  start(): Promise<ShardResult> {
    if (this.shard === null) throw new Error('start before bind');
    if (!this.settled) {
      const command: EngineCommand = { type: 'start', shard: this.shard.data };
      this.worker.postMessage(command);
    }
    return this.result;
  }

  private command(command: EngineCommand): void {
    if (!this.settled) this.worker.postMessage(command);
  }

  /** Ends the thread at once, as a crash would (`result` rejects). For operators and tests. */
  async terminate(): Promise<void> {
    await this.worker.terminate();
  }

  private readonly onAbort = (): void => {
    if (this.settled || this.shard === null) return;
    const reason = this.shard.signal.reason as Error | undefined;
    const command: EngineCommand = { type: 'abort', reason: String(reason?.message ?? 'aborted') };
    this.worker.postMessage(command);
    this.abortTimer = setTimeout(
      () => this.fail(`engine worker did not stop within ${ABORT_GRACE_MS} ms of the abort`),
      ABORT_GRACE_MS,
    );
  };

  private readonly onReport = (report: EngineReport): void => {
    if (this.settled) return;
    const sink = this.shard?.sink;
    switch (report.type) {
      case 'ready':
        this.readyNow();
        return;
      case 'records':
        for (const record of report.records) {
          try {
            sink?.record(record);
          } catch {
            // As inline: an output that throws must not stop the load; the sink logs its own failures.
            this.sinkErrors++;
          }
        }
        return;
      case 'window':
        try {
          sink?.window(report.window);
        } catch {
          this.sinkErrors++;
        }
        return;
      case 'result':
        this.settle();
        this.resolve({ ...report.result, sinkErrors: report.result.sinkErrors + this.sinkErrors });
        return;
      case 'failed':
        // As inline, where runShard rejects with this message.
        this.fail(report.message);
        return;
    }
  };

  private fail(reason: string): void {
    if (this.settled) return;
    this.settle();
    this.reject(new Error(reason));
    // No effect once ready: the failure is then the result's.
    this.notReady(new Error(reason));
  }

  private settle(): void {
    this.settled = true;
    this.shard?.signal.removeEventListener('abort', this.onAbort);
    if (this.abortTimer !== null) clearTimeout(this.abortTimer);
    this.abortTimer = null;
    // Every message the worker sent came before this one; what is left of the thread is ended.
    void this.worker.terminate();
  }
}
