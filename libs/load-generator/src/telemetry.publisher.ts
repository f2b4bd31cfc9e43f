import { Logger } from '@nestjs/common';
import type { Bus } from '@fathom/bus';
import {
  Topics,
  envelope,
  type RequestRecord,
  type RequestTelemetry,
  type TelemetryWindow,
} from '@fathom/contracts';
import type { TelemetrySink, WindowSnapshot } from '@fathom/load';
import type { LoadMetrics } from './load.metrics';
import { estimatedRecordBytes } from './record-size.util';

const MAX_BATCH_RECORDS = 200;
/**
 * Estimated JSON bytes per message. Encoding (schema check + JSON + UTF-8) runs on the engine's
 * event loop at about 11 ms per MB here, so a message is kept near 0.7 ms: 200 records with
 * top-5 logprobs on 64 tokens are 2.7 MB (35 ms measured), a stall every inter-token timing in
 * flight would carry. Without logprobs this is ~40 records a message.
 */
const MAX_BATCH_BYTES = 64 * 1024;
const FLUSH_EVERY_MS = 250;

/**
 * The engine's sink for one shard: records are queued and published in batches off the hot
 * path (k6's rule: outputs never block the engine); windows are published as they come.
 * A batch closes at MAX_BATCH_RECORDS records or MAX_BATCH_BYTES estimated bytes and is encoded
 * in a later macrotask, one batch per macrotask, so the engine's socket reads (and their time
 * stamps) come between two encodings, never behind a run of them.
 * `drain()` flushes everything and reports how much went out, so the lifecycle event can carry
 * exact counts for the analyzer to wait for.
 */
export class TelemetryPublisher implements TelemetrySink {
  private readonly logger = new Logger(TelemetryPublisher.name);
  private queue: RequestRecord[] = [];
  private queueBytes = 0;
  /** Closed batches waiting for their macrotask, oldest first. */
  private readonly ready: RequestRecord[][] = [];
  private sending = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timer: NodeJS.Timeout;
  recordsPublished = 0;
  windowsPublished = 0;
  publishFailures = 0;

  constructor(
    private readonly bus: Bus,
    private readonly campaignId: string,
    private readonly runId: string,
    private readonly generatorId: string,
    private readonly metrics: LoadMetrics,
  ) {
    this.timer = setInterval(() => this.flush(), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  record(record: RequestRecord): void {
    this.queue.push(record);
    this.queueBytes += estimatedRecordBytes(record);
    if (this.queue.length >= MAX_BATCH_RECORDS || this.queueBytes >= MAX_BATCH_BYTES) this.flush();
  }

  window(snapshot: WindowSnapshot): void {
    this.metrics.observe(snapshot);
    const event: TelemetryWindow = {
      ...envelope(this.campaignId, this.runId),
      generatorId: this.generatorId,
      ...snapshot,
    };
    this.track(this.bus.publish(Topics.telemetryWindow, event).then(() => void this.windowsPublished++));
  }

  /** Closes the open batch; it is published in a later macrotask. */
  private flush(): void {
    if (!this.queue.length) return;
    this.ready.push(this.queue);
    this.queue = [];
    this.queueBytes = 0;
    if (!this.sending) {
      this.sending = true;
      setImmediate(this.sendNext);
    }
  }

  private readonly sendNext = (): void => {
    const records = this.ready.shift();
    if (records !== undefined) this.publishBatch(records);
    if (this.ready.length > 0) setImmediate(this.sendNext);
    else this.sending = false;
  };

  private publishBatch(records: RequestRecord[]): void {
    const event: RequestTelemetry = {
      ...envelope(this.campaignId, this.runId),
      generatorId: this.generatorId,
      records,
    };
    this.track(
      this.bus.publish(Topics.requestTelemetry, event).then(() => {
        this.recordsPublished += records.length;
      }),
    );
  }

  private track(publish: Promise<void>): void {
    const tracked = publish.catch((error: Error) => {
      this.publishFailures++;
      this.logger.error(`run ${this.runId}: telemetry publish failed: ${error.message}`);
    });
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
  }

  async drain(): Promise<void> {
    clearInterval(this.timer);
    this.flush();
    while (this.sending || this.inFlight.size) {
      if (this.inFlight.size) await Promise.all([...this.inFlight]);
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }
}
