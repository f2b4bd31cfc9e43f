import type { TopicDef } from './topics';

export const SERVICE_NAMES = [
  'orchestrator',
  'load-generator',
  'semantic-monitor',
  'gpu-collector',
  'analyzer',
] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/**
 * The consumer group of a service on one topic: `fathom.<service>.<topic>`. Each service gets
 * every message of a topic once, and the instances of one service share the topic's partitions.
 * One group per (service, topic) rather than per service: a kafkajs consumer serves one
 * subscription, and members of one group that subscribe to different topics would force a
 * rebalance of them all on every join. `instance` makes a broadcast group (every instance gets
 * every message), e.g. for aborts.
 */
export function consumerGroup(service: ServiceName, topic: TopicDef, instance?: string): string {
  return `fathom.${service}.${topic.name}${instance ? `.${instance}` : ''}`;
}
