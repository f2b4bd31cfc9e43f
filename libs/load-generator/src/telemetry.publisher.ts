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
 * What a publisher keeps for resending while the bus refuses it (broker down): windows, one per
 * second, for an hour (a window is a few KB), and record batches up to 16 MiB (estimated). Past
 * these bounds the newest are counted lost, and the shard's counts say so.
 */
export const MAX_KEPT_WINDOWS = 3600;
export const MAX_KEPT_RECORD_BYTES = 16 * 1024 * 1024;
/** Resend backoff: 250 ms doubling to 5 s; one message probes, the rest follow once it went. */
const RESEND_MIN_MS = 250;
const RESEND_MAX_MS = 5_000;

/** A message the bus refused, kept for resending. */
interface Kept {
  readonly send: () => Promise<void>;
  readonly kind: 'window' | 'records';
  readonly bytes: number;
  readonly records: number;
}

/**
 * The engine's sink for one shard: records are queued and published in batches off the hot
 * path (k6's rule: outputs never block the engine); windows are published as they come.
 * A batch closes at MAX_BATCH_RECORDS records or MAX_BATCH_BYTES estimated bytes and is encoded
 * in a later macrotask, one batch per macrotask, so the engine's socket reads (and their time
 * stamps) come between two encodings, never behind a run of them.
 * `drain()` flushes everything and reports how much went out, so the lifecycle event can carry
 * exact counts for the analyzer to wait for.
 *
 * A message the bus refuses (broker down past its client's retries) is kept, within
 * MAX_KEPT_WINDOWS / MAX_KEPT_RECORD_BYTES, and resent with backoff until the bus takes it;
 * `drain()` waits for them up to its patience. Whatever is given up is counted
 * (`windowsLost`, `recordsLost`): the analyzer compares the shard's counts with what it stored.
 */
export class TelemetryPublisher implements TelemetrySink {
  private readonly logger = new Logger(TelemetryPublisher.name);
  private queue: RequestRecord[] = [];
  private queueBytes = 0;
  /** Closed batches waiting for their macrotask, oldest first. */
  private readonly ready: RequestRecord[][] = [];
  private sending = false;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly timer: NodeJS.Timeout;
  recordsPublished = 0;
  windowsPublished = 0;
  publishFailures = 0;
  windowsLost = 0;
  recordsLost = 0;
  private readonly kept: Kept[] = [];
  private keptBytes = 0;
  private resendTimer: NodeJS.Timeout | null = null;
  private resendAttempt = 0;

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
    this.send({
      send: () => this.bus.publish(Topics.telemetryWindow, event).then(() => void this.windowsPublished++),
      kind: 'window',
      bytes: 0,
      records: 0,
    });
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
    let bytes = 0;
    for (const r of records) bytes += estimatedRecordBytes(r);
    this.send({
      send: () =>
        this.bus.publish(Topics.requestTelemetry, event).then(() => {
          this.recordsPublished += records.length;
        }),
      kind: 'records',
      bytes,
      records: records.length,
    });
  }

  /**
   * Publishes; a refused message is kept for resending (true when it went). A refused probe goes
   * back to the front, so the kept messages go out in the order they were made.
   */
  private send(message: Kept, probe = false): Promise<boolean> {
    const tracked = message.send().then(
      () => {
        this.resendAttempt = 0;
        return true;
      },
      (error: Error) => {
        this.publishFailures++;
        this.keep(message, error, probe);
        return false;
      },
    );
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
    return tracked;
  }

  private keep(message: Kept, error: Error, atFront: boolean): void {
    const full =
      message.kind === 'window'
        ? this.kept.filter((k) => k.kind === 'window').length >= MAX_KEPT_WINDOWS
        : this.keptBytes + message.bytes > MAX_KEPT_RECORD_BYTES;
    if (full) {
      this.lose(message);
      this.logger.error(`run ${this.runId}: telemetry lost, keep-for-resend full: ${error.message}`);
      return;
    }
    if (this.kept.length === 0)
      this.logger.warn(`run ${this.runId}: telemetry publish failed, kept for resending: ${error.message}`);
    if (atFront) this.kept.unshift(message);
    else this.kept.push(message);
    this.keptBytes += message.bytes;
    this.scheduleResend();
  }

  private lose(message: Kept): void {
    if (message.kind === 'window') this.windowsLost++;
    else this.recordsLost += message.records;
  }

  private scheduleResend(): void {
    if (this.resendTimer || this.kept.length === 0) return;
    const delay = Math.min(RESEND_MAX_MS, RESEND_MIN_MS * 2 ** this.resendAttempt);
    this.resendTimer = setTimeout(() => void this.resend(), delay);
  }

  /** One kept message probes the bus; once it went, the rest follow in order. */
  private async resend(): Promise<void> {
    this.resendTimer = null;
    this.resendAttempt++;
    const probe = this.takeKept();
    if (!probe) return;
    if (!(await this.send(probe, true))) return; // kept again; send() scheduled the next try
    while (this.kept.length) void this.send(this.takeKept()!);
  }

  private takeKept(): Kept | undefined {
    const message = this.kept.shift();
    if (message) this.keptBytes -= message.bytes;
    return message;
  }

  /**
   * Flushes everything and waits until it went, or until `patienceMs` passed with messages still
   * refused: those are counted lost.
   */
  async drain(patienceMs = 60_000): Promise<void> {
    clearInterval(this.timer);
    this.flush();
    const deadline = Date.now() + patienceMs;
    while (this.sending || this.inFlight.size || this.kept.length) {
      if (this.inFlight.size) await Promise.race([Promise.all([...this.inFlight]), sleep(100)]);
      else if (this.kept.length) {
        if (Date.now() >= deadline) break;
        await sleep(50);
      } else await new Promise((resolve) => setImmediate(resolve));
      if (Date.now() >= deadline && !this.inFlight.size) break;
    }
    if (this.resendTimer) clearTimeout(this.resendTimer);
    this.resendTimer = null;
    while (this.kept.length) this.lose(this.takeKept()!);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
