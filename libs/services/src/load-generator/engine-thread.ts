import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { RunShardOptions, ShardResult, TelemetrySink } from '@fathom/load';
import type { EngineCommand, EngineReport, EngineWorkerData } from './engine-thread.protocol';

/** What the service hands an engine: `runShard`'s options without the in-process-only hooks. */
export type ShardEngineOptions = Pick<
  RunShardOptions,
  'spec' | 'shard' | 'runId' | 'campaignId' | 'generatorId' | 'sink' | 'signal'
>;

/** Runs one shard to its end: `runShard` itself (inline) or `runShardInThread`. */
export type ShardEngine = (options: ShardEngineOptions) => Promise<ShardResult>;

/**
 * After an abort the engine cancels what is in flight and reports within a second; a worker
 * that has said nothing this long after is wedged and is ended, so the run never hangs on it.
 */
const ABORT_GRACE_MS = 10_000;

/** The workspace root (holds .swcrc), for compiling the worker from source; null when built. */
function sourceRoot(from: string): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.swcrc'))) return dir;
    if (dirname(dir) === dir) return null;
  }
}

// From source (jest, the benches) the worker entry is TypeScript, which a worker thread cannot
// load: this bootstrap compiles it and everything it imports with @swc/core and the workspace
// .swcrc (its paths turn @fathom/* into relative imports), as bench/ts-register.js does for the
// main thread. Built (dist/), the entry is the compiled .js and no bootstrap runs.
const TS_BOOTSTRAP = `
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { createRequire } = require('node:module');
const { workerData } = require('node:worker_threads');
const { entry, root } = workerData.bootstrap;
const swc = createRequire(entry)('@swc/core');
const swcrc = JSON.parse(readFileSync(join(root, '.swcrc'), 'utf8'));
delete swcrc.$schema;
swcrc.jsc.baseUrl = root;
require.extensions['.ts'] = (module, filename) =>
  module._compile(
    swc.transformSync(readFileSync(filename, 'utf8'), { ...swcrc, filename, swcrc: false, sourceMaps: false }).code,
    filename,
  );
createRequire(entry)(entry);
`;

/**
 * One shard's engine on its own worker thread (`engine.worker`). Records and windows come back
 * in the engine's order and go to `sink` unchanged; `result` settles with the engine's counts
 * once every record it made has been handed over, or rejects with the reason when the engine
 * failed, the thread crashed or exited early, or it did not stop after an abort. An abort of
 * `signal` is forwarded (the engine stops its load within a second, as inline).
 */
export class EngineThread {
  readonly result: Promise<ShardResult>;
  private readonly worker: Worker;
  private readonly sink: TelemetrySink;
  private readonly signal: AbortSignal;
  private settled = false;
  private abortTimer: NodeJS.Timeout | null = null;
  /** Calls into `sink` that threw here (added to the engine's own `sinkErrors`). */
  private sinkErrors = 0;
  private resolve!: (result: ShardResult) => void;
  private reject!: (error: Error) => void;

  constructor(options: ShardEngineOptions) {
    const { spec, shard, runId, campaignId, generatorId, sink, signal } = options;
    this.sink = sink;
    this.signal = signal;
    this.result = new Promise<ShardResult>((res, rej) => ((this.resolve = res), (this.reject = rej)));
    const data: EngineWorkerData = { spec, shard, runId, campaignId, generatorId };
    const compiled = __filename.endsWith('.js');
    const entry = join(__dirname, `engine.worker.${compiled ? 'js' : 'ts'}`);
    const root = compiled ? null : sourceRoot(__dirname);
    if (!compiled && root === null)
      throw new Error(`no .swcrc above ${__dirname} to compile the engine worker`);
    this.worker = compiled
      ? new Worker(entry, { workerData: data })
      : new Worker(TS_BOOTSTRAP, { eval: true, workerData: { ...data, bootstrap: { entry, root } } });
    this.worker.on('message', this.onReport);
    this.worker.on('messageerror', (error) =>
      this.fail(`engine worker sent a message that could not be read: ${error.message}`),
    );
    this.worker.on('error', (error) => this.fail(`engine worker crashed: ${error.message}`));
    this.worker.on('exit', (code) =>
      this.fail(`engine worker exited (code ${code}) before reporting its result`),
    );
    if (signal.aborted) this.onAbort();
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Ends the thread at once, as a crash would (`result` rejects). For operators and tests. */
  async terminate(): Promise<void> {
    await this.worker.terminate();
  }

  private readonly onAbort = (): void => {
    if (this.settled) return;
    const reason = this.signal.reason as Error | undefined;
    const command: EngineCommand = { type: 'abort', reason: String(reason?.message ?? 'aborted') };
    this.worker.postMessage(command);
    this.abortTimer = setTimeout(
      () => this.fail(`engine worker did not stop within ${ABORT_GRACE_MS} ms of the abort`),
      ABORT_GRACE_MS,
    );
  };

  private readonly onReport = (report: EngineReport): void => {
    if (this.settled) return;
    switch (report.type) {
      case 'records':
        for (const record of report.records) {
          try {
            this.sink.record(record);
          } catch {
            // As inline: an output that throws must not stop the load; the sink logs its own failures.
            this.sinkErrors++;
          }
        }
        return;
      case 'window':
        try {
          this.sink.window(report.window);
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
        this.settle();
        this.reject(new Error(report.message));
        return;
    }
  };

  private fail(reason: string): void {
    if (this.settled) return;
    this.settle();
    this.reject(new Error(reason));
  }

  private settle(): void {
    this.settled = true;
    this.signal.removeEventListener('abort', this.onAbort);
    if (this.abortTimer !== null) clearTimeout(this.abortTimer);
    this.abortTimer = null;
    // Every message the worker sent came before this one; what is left of the thread is ended.
    void this.worker.terminate();
  }
}

/** `runShard` with the engine on its own worker thread (see `EngineThread`). */
export const runShardInThread: ShardEngine = (options) => new EngineThread(options).result;
