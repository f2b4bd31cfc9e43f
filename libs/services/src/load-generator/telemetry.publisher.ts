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

const MAX_BATCH = 200;
const FLUSH_EVERY_MS = 250;

/**
 * The engine's sink for one shard: records are queued and published in batches off the hot
 * path (k6's rule: outputs never block the engine); windows are published as they come.
 * `drain()` flushes everything and reports how much went out, so the lifecycle event can carry
 * exact counts for the analyzer to wait for.
 */
export class TelemetryPublisher implements TelemetrySink {
  private readonly logger = new Logger(TelemetryPublisher.name);
  private queue: RequestRecord[] = [];
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
    if (this.queue.length >= MAX_BATCH) this.flush();
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

  private flush(): void {
    if (!this.queue.length) return;
    const records = this.queue;
    this.queue = [];
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
    while (this.inFlight.size) await Promise.all([...this.inFlight]);
  }
}
