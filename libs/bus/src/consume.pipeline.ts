import type { z } from 'zod';
import { Topics, type DeadLetter, type TopicDef } from '@fathom/contracts';
import type { Handler, MessageContext } from './bus';
import type { BusLogger } from './bus-logger';
import { buildDeadLetter } from './dead-letter.util';
import { decodeEvent } from './event.codec';
import type { RawMessage } from './raw-message';
import type { SeenIds } from './seen-ids.lru';
import { runInMessageContext } from './trace-context.util';

export const DEFAULT_MAX_ATTEMPTS = 3;

/** Delay before handler attempt `attempt + 1`: 50, 100, 200 ... ms, at most 1 s. */
export function defaultRetryBackoffMs(attempt: number): number {
  return Math.min(50 * 2 ** (attempt - 1), 1000);
}

export type DeliveryOutcome = 'handled' | 'duplicate' | 'dead-lettered' | 'dropped';

export interface ConsumePipelineOptions<S extends z.ZodType> {
  readonly topic: TopicDef<S>;
  readonly group: string;
  readonly handler: Handler<S>;
  /** Shared by every subscription of one group in this process. */
  readonly seen: SeenIds;
  readonly publishDeadLetter: (deadLetter: DeadLetter) => Promise<void>;
  readonly logger: BusLogger;
  readonly maxAttempts?: number;
  readonly retryBackoffMs?: (attempt: number) => number;
}

/**
 * What both transports do with one arrived message: decode and validate it, skip an event id the
 * group already handled, call the handler (in the message's trace context) up to `maxAttempts`
 * times, and dead-letter what cannot be taken. Resolves once the message is finished with, so
 * the transport may commit its offset; rejects only when the dead letter itself could not be
 * published (the transport must then not commit, and the message comes again).
 */
export class ConsumePipeline<S extends z.ZodType> {
  private readonly maxAttempts: number;
  private readonly retryBackoffMs: (attempt: number) => number;

  constructor(private readonly options: ConsumePipelineOptions<S>) {
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be a positive integer, got ${options.maxAttempts}`);
    }
    this.retryBackoffMs = options.retryBackoffMs ?? defaultRetryBackoffMs;
  }

  async process(message: RawMessage): Promise<DeliveryOutcome> {
    const { topic, seen } = this.options;
    const decoded = decodeEvent(topic.schema, message.value);
    if (!decoded.ok) {
      return this.deadLetter(message, {
        reason: decoded.reason,
        error: decoded.error,
        attempts: 0,
        parsed: decoded.parsed,
      });
    }
    const event = decoded.event as z.infer<S> & { id?: unknown };
    const eventId = typeof event.id === 'string' ? event.id : null;
    if (eventId !== null && seen.has(eventId)) return 'duplicate';

    let lastError: unknown;
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const context: MessageContext = {
        topic: message.topic,
        key: message.key,
        partition: message.partition,
        offset: message.offset,
        headers: message.headers,
        attempt,
      };
      try {
        await runInMessageContext(message.headers, () => this.options.handler(event, context));
        if (eventId !== null) seen.add(eventId);
        return 'handled';
      } catch (error) {
        lastError = error;
        if (attempt < this.maxAttempts) await sleep(this.retryBackoffMs(attempt));
      }
    }
    const outcome = await this.deadLetter(message, {
      reason: 'handler-failed',
      error: lastError instanceof Error ? lastError.message : String(lastError),
      attempts: this.maxAttempts,
      parsed: event,
    });
    if (eventId !== null) seen.add(eventId);
    return outcome;
  }

  private async deadLetter(
    message: RawMessage,
    failure: { reason: DeadLetter['reason']; error: string; attempts: number; parsed?: unknown },
  ): Promise<DeliveryOutcome> {
    const { group, logger } = this.options;
    if (message.topic === Topics.deadLetter.name) {
      // Dead-lettering a dead letter would feed it back to this very consumer, forever.
      logger.error('dropping a message on the dead-letter topic that its consumer cannot take', {
        group,
        offset: message.offset,
        reason: failure.reason,
        error: failure.error,
      });
      return 'dropped';
    }
    logger.warn('dead-lettering a message', {
      topic: message.topic,
      group,
      partition: message.partition,
      offset: message.offset,
      reason: failure.reason,
      error: failure.error,
    });
    await this.options.publishDeadLetter(buildDeadLetter({ message, group, ...failure }));
    return 'dead-lettered';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((wake) => setTimeout(wake, ms));
}
