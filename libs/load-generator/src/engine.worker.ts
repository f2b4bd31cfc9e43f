/**
 * Worker-thread entry of `EngineThread`: runs one shard's `runShard` on this thread's event loop,
 * so nothing the main thread does (bus I/O, encoding, the other services of an embedded process)
 * delays the engine's socket reads and their time stamps. It says `ready` once loaded and runs
 * the shard that `start` names (a spare waits loaded until then); records and windows go to the
 * main thread in small batches; the last message is the shard's result or its failure.
 */
import { parentPort } from 'node:worker_threads';
import type { RequestRecord } from '@fathom/contracts';
import { GpuMemoryGauge, runShard, type TelemetrySink, type WindowSnapshot } from '@fathom/load';
import type { EngineCommand, EngineReport, EngineWorkerData } from './engine-thread.protocol';
import type { GateState } from './shard-controls';
import { estimatedRecordBytes } from './record-size.util';

const port = parentPort;
if (!port) throw new Error('engine.worker runs only as a worker thread');
const report = (message: EngineReport) => port.postMessage(message);

/**
 * A batch closes at this many records, this estimated size or this age, whichever comes first.
 * postMessage serialises on this thread (structured clone): measured here, 0.08 ms per record
 * with top-5 logprobs on 64 tokens (~14 KB cloned), 0.65 ms for 8 of them, 4 ms for 50. So a
 * message is kept near 64 KB (~0.3 ms of the engine's time). Records hold only strings, numbers
 * and plain arrays: nothing can be transferred instead of copied.
 */
const MAX_BATCH_RECORDS = 50;
const MAX_BATCH_BYTES = 64 * 1024;
const MAX_BATCH_AGE_MS = 20;

class ForwardingSink implements TelemetrySink {
  private batch: RequestRecord[] = [];
  private batchBytes = 0;
  private timer: NodeJS.Timeout | null = null;

  record(record: RequestRecord): void {
    this.batch.push(record);
    this.batchBytes += estimatedRecordBytes(record);
    if (this.batch.length >= MAX_BATCH_RECORDS || this.batchBytes >= MAX_BATCH_BYTES) this.flush();
    else this.timer ??= setTimeout(this.flush, MAX_BATCH_AGE_MS);
  }

  window(window: WindowSnapshot): void {
    report({ type: 'window', window });
  }

  readonly flush = (): void => {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.batch.length === 0) return;
    const records = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    report({ type: 'records', records });
  };
}

const abort = new AbortController();
const sink = new ForwardingSink();
let started = false;
// The shard's controls as the main thread last sent them (ShardControls there).
let gate: GateState = { closedPaths: [], closedAll: false };
const gpu = new GpuMemoryGauge();

function start(shard: EngineWorkerData): void {
  if (started) return;
  started = true;
  const allowed = (path: string) => !gate.closedAll && !gate.closedPaths.includes(path);
  runShard({ ...shard, sink, signal: abort.signal, gate: allowed, gpu }).then(
    (result) => {
      sink.flush();
      report({ type: 'result', result });
    },
    (error: unknown) => {
      sink.flush();
      report({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    },
  );
}

port.on('message', (command: EngineCommand) => {
  if (command.type === 'abort') abort.abort(new Error(command.reason));
  else if (command.type === 'gate') gate = command.gate;
  else if (command.type === 'gpu') gpu.report(command.gpuMemoryUsed);
  else start(command.shard);
});
report({ type: 'ready' });
