import type { RequestRecord } from '@fathom/contracts';
import type { DriverOutcome, TelemetrySink, WindowSnapshot } from '@fathom/load';

/**
 * Puts a driver's tool-call observations (`DriverOutcome.toolCalls`) on the request record the
 * engine built for the same request, before the record reaches the publisher.
 *
 * Why here: the engine (libs/load/src/engine/run-shard.ts) copies outcome fields into the record
 * one by one and does not copy `toolCalls` yet; until it does, this sink joins them. It relies on
 * the engine's order for one finished request: `sink.record(record)` then `tap(requestId,
 * outcome)`, synchronously, in the same call. One record is held between the two; anything that
 * arrives next (another record, a window, `flush()`) releases a held record unchanged, so a change
 * of that order loses tool calls, never records. Single owner: one shard's engine.
 */
export class ToolCallJoinSink implements TelemetrySink {
  private held: RequestRecord | null = null;

  constructor(private readonly inner: TelemetrySink) {}

  record(record: RequestRecord): void {
    this.release();
    this.held = record;
  }

  window(window: WindowSnapshot): void {
    this.release();
    this.inner.window(window);
  }

  /** The engine's `tap`: every finished request, sampled or not. */
  readonly tap = (requestId: string, outcome: DriverOutcome): void => {
    const record = this.held;
    if (record === null || record.requestId !== requestId) return;
    if (outcome.toolCalls !== undefined) record.toolCalls = outcome.toolCalls;
    this.release();
  };

  /** Releases a held record; call before draining the inner sink. */
  flush(): void {
    this.release();
  }

  private release(): void {
    const record = this.held;
    if (record === null) return;
    this.held = null;
    this.inner.record(record);
  }
}
