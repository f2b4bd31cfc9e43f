import type { z } from 'zod';
import type { TopicDef } from '@fathom/contracts';

/** Where a delivered message came from. Kafka fills partition/offset; in-memory fills its own. */
export interface MessageContext {
  readonly topic: string;
  readonly key: string | null;
  readonly partition: number | null;
  readonly offset: string | null;
  readonly headers: Readonly<Record<string, string>>;
  /** 1 on first delivery to the handler, counting retries within this process. */
  readonly attempt: number;
}

export type Handler<S extends z.ZodType> = (
  event: z.infer<S>,
  context: MessageContext,
) => Promise<void> | void;

export interface PublishOptions {
  /** Overrides the topic's `keyOf`. */
  readonly key?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface SubscribeOptions {
  /**
   * Consumer group. Members of one group share the topic's partitions (each message reaches
   * one member); different groups each get every message (use a per-instance group to broadcast).
   */
  readonly group: string;
  /** Handler attempts before the message is dead-lettered with reason `handler-failed`. */
  readonly maxAttempts?: number;
  /** A new group starts from the earliest retained message instead of the latest. */
  readonly fromBeginning?: boolean;
}

export interface Subscription {
  close(): Promise<void>;
}

/**
 * The one bus interface; the in-memory and Kafka transports have the same semantics:
 * - publish is keyed: messages with one key stay in order;
 * - delivery is at-least-once: an offset is committed only after the handler succeeded;
 * - every message is validated on arrival against the topic's schema; an invalid message, or one
 *   whose handler failed `maxAttempts` times, goes to `fathom.dlq.v1` with the reason and the
 *   consumer carries on with the next;
 * - handlers are called at most once per event id per group within a process (idempotency).
 */
export interface Bus {
  publish<S extends z.ZodType>(
    topic: TopicDef<S>,
    event: z.infer<S>,
    options?: PublishOptions,
  ): Promise<void>;
  publishMany<S extends z.ZodType>(topic: TopicDef<S>, events: readonly z.infer<S>[]): Promise<void>;
  /** Publishes bytes that bypass validation on the way out (replaying dead letters, tests). */
  publishRaw(topicName: string, value: Buffer | string, key?: string | null): Promise<void>;
  subscribe<S extends z.ZodType>(
    topic: TopicDef<S>,
    options: SubscribeOptions,
    handler: Handler<S>,
  ): Promise<Subscription>;
  close(): Promise<void>;
}
