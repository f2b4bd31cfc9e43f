import type { z } from 'zod';
import { consumerGroup, type ServiceName, type TopicDef } from '@fathom/contracts';
import type { Bus, Handler, Subscription } from './bus';

/** One consumer of a service: a topic, its handler, and how the consumer group is formed. */
export interface Consumer {
  readonly topic: TopicDef;
  readonly handler: Handler<z.ZodType>;
  /** A new group starts from the earliest retained message (shard commands: see isStaleShardCommand). */
  readonly fromBeginning?: boolean;
  /** A broadcast group of this instance: every instance of the service gets every message. */
  readonly broadcastAs?: string;
}

/** A typed `Consumer`: the handler gets the topic's event type. */
export function consume<S extends z.ZodType>(
  topic: TopicDef<S>,
  handler: Handler<S>,
  options: { fromBeginning?: boolean; broadcastAs?: string } = {},
): Consumer {
  return { topic, handler: handler as Handler<z.ZodType>, ...options };
}

/**
 * Subscribes a service to all its topics, each in its group `fathom.<service>.<topic>` (or the
 * instance's broadcast group). The joins run side by side: each waits for its group's rebalance,
 * in series they add up. Validation, retries, dead-lettering and idempotency are the bus's.
 */
export function subscribeAll(
  bus: Bus,
  service: ServiceName,
  consumers: readonly Consumer[],
): Promise<Subscription[]> {
  return Promise.all(
    consumers.map((c) =>
      bus.subscribe(
        c.topic,
        { group: consumerGroup(service, c.topic, c.broadcastAs), fromBeginning: c.fromBeginning },
        c.handler,
      ),
    ),
  );
}
