import type { z } from 'zod';
import { Topics, type TopicDef } from '@fathom/contracts';
import type { Bus, Handler, PublishOptions, SubscribeOptions, Subscription } from './bus';
import { consoleBusLogger, type BusLogger } from './bus-logger';
import { ConsumePipeline } from './consume.pipeline';
import { encodeEvent } from './event.codec';
import { partitionForKey } from './partition.util';
import { SeenIds } from './seen-ids.lru';
import { withTraceContext } from './trace-context.util';

export interface InMemoryBusOptions {
  /** Partitions per topic; members of one group share them, so this caps a group's parallelism. */
  readonly partitions?: number;
  /**
   * Messages kept per partition for groups that join later with `fromBeginning`. Messages a
   * subscribed group has not consumed yet are kept regardless, so a slow consumer loses nothing.
   */
  readonly retainPerPartition?: number;
  /**
   * Bytes (encoded values) kept per partition on the same terms: with telemetry batches of up to
   * 64 KB, 10,000 messages could hold most of a gigabyte per partition in a long run.
   */
  readonly retainBytesPerPartition?: number;
  /**
   * How long (ms) a consumed message is kept at most on the same terms. Groups of one process
   * join as its services start, within seconds; without an age bound, a topic that sees one
   * event a second filled its 10,000-message bound over hours, and the bus grew all that time.
   */
  readonly retainMs?: number;
  /** Event ids remembered per group for idempotency. */
  readonly seenIdsCapacity?: number;
  readonly retryBackoffMs?: (attempt: number) => number;
  readonly logger?: BusLogger;
}

interface StoredMessage {
  readonly key: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly value: Buffer;
  /** performance.now() when appended. */
  readonly atMs: number;
}

/**
 * `value` in memory of its own. A small Buffer (`Buffer.from` of under 4 KB, as `encodeEvent`
 * makes) is a view of Node's shared 8 KB pool: one kept message kept its whole slab alive, and
 * with it every other small buffer the process cut from that slab, so the byte bound counted a
 * fraction of what retention held.
 */
function ownedBytes(value: Buffer): Buffer {
  if (value.byteOffset === 0 && value.buffer.byteLength === value.length) return value;
  const owned = Buffer.allocUnsafeSlow(value.length);
  value.copy(owned);
  return owned;
}

class PartitionLog {
  /** Offset of messages[0]; grows as retention trims the head. */
  startOffset = 0;
  readonly messages: StoredMessage[] = [];
  /** Sum of the kept messages' value lengths. */
  bytes = 0;

  append(message: StoredMessage): void {
    this.messages.push(message);
    this.bytes += message.value.length;
  }

  /**
   * The lowest offset that keeps at most `maxMessages` messages and `maxBytes` bytes, none
   * appended before `oldestMs`.
   */
  retainFrom(maxMessages: number, maxBytes: number, oldestMs: number): number {
    let from = Math.max(this.startOffset, this.endOffset - maxMessages);
    let bytes = this.bytes;
    for (let i = 0; i < from - this.startOffset; i++) bytes -= this.messages[i].value.length;
    while (from < this.endOffset && (bytes > maxBytes || this.at(from).atMs < oldestMs))
      bytes -= this.at(from++).value.length;
    return from;
  }

  get endOffset(): number {
    return this.startOffset + this.messages.length;
  }

  at(offset: number): StoredMessage {
    return this.messages[offset - this.startOffset];
  }

  trimBelow(offset: number): void {
    const drop = Math.min(offset - this.startOffset, this.messages.length);
    if (drop <= 0) return;
    for (let i = 0; i < drop; i++) this.bytes -= this.messages[i].value.length;
    this.messages.splice(0, drop);
    this.startOffset += drop;
  }
}

interface Member {
  // `any`: members of one group may subscribe with different handler types to the same topic.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly pipeline: ConsumePipeline<any>;
  /** Messages this member is handling now (one per partition it owns), so close() can wait. */
  readonly inFlight: Set<Promise<unknown>>;
}

class GroupState {
  readonly members: Member[] = [];
  /** Per partition: the next offset to deliver, i.e. the committed position. */
  readonly positions: number[];
  readonly owners: (Member | null)[];
  readonly draining: boolean[];

  constructor(log: TopicLog, fromBeginning: boolean) {
    this.positions = log.partitions.map((p) => (fromBeginning ? p.startOffset : p.endOffset));
    this.owners = log.partitions.map(() => null);
    this.draining = log.partitions.map(() => false);
  }

  /** Round-robin assignment: partition p goes to member p mod n. */
  rebalance(): void {
    for (let p = 0; p < this.owners.length; p++) {
      this.owners[p] = this.members.length === 0 ? null : this.members[p % this.members.length];
    }
  }
}

class TopicLog {
  readonly partitions: PartitionLog[];
  readonly groups = new Map<string, GroupState>();
  private roundRobin = 0;

  constructor(
    readonly name: string,
    partitionCount: number,
  ) {
    this.partitions = Array.from({ length: partitionCount }, () => new PartitionLog());
  }

  partitionFor(key: string | null): number {
    if (key === null) return this.roundRobin++ % this.partitions.length;
    return partitionForKey(key, this.partitions.length);
  }
}

/**
 * The embedded bus for one process, with the Kafka transport's semantics: keyed partitions,
 * consumer groups, a retained log, validation on arrival, retries, dead letters, idempotency.
 * Publishing appends to the log and returns; delivery runs later on the event loop, so a slow
 * handler never blocks a publisher. Each partition of each group is handled one message at a
 * time, which keeps one key's events in order.
 */
export class InMemoryBus implements Bus {
  private readonly topics = new Map<string, TopicLog>();
  private readonly seenByGroup = new Map<string, SeenIds>();
  private readonly pendingDelivery = new Set<TopicLog>();
  private readonly partitionCount: number;
  private readonly retainPerPartition: number;
  private readonly retainBytesPerPartition: number;
  private readonly retainMs: number;
  private readonly logger: BusLogger;
  private closed = false;

  constructor(private readonly options: InMemoryBusOptions = {}) {
    this.partitionCount = options.partitions ?? 3;
    this.retainPerPartition = options.retainPerPartition ?? 10_000;
    this.retainBytesPerPartition = options.retainBytesPerPartition ?? 8 * 1024 * 1024;
    this.retainMs = options.retainMs ?? 60_000;
    this.logger = options.logger ?? consoleBusLogger;
    if (!Number.isInteger(this.partitionCount) || this.partitionCount < 1) {
      throw new RangeError(`partitions must be a positive integer, got ${options.partitions}`);
    }
  }

  async publish<S extends z.ZodType>(
    topic: TopicDef<S>,
    event: z.infer<S>,
    options: PublishOptions = {},
  ): Promise<void> {
    this.assertOpen();
    const value = encodeEvent(topic, event);
    this.append(topic.name, options.key ?? topic.keyOf(event), withTraceContext(options.headers), value);
  }

  async publishMany<S extends z.ZodType>(topic: TopicDef<S>, events: readonly z.infer<S>[]): Promise<void> {
    this.assertOpen();
    const encoded = events.map((event) => ({ key: topic.keyOf(event), value: encodeEvent(topic, event) }));
    const headers = withTraceContext();
    for (const { key, value } of encoded) this.append(topic.name, key, headers, value);
  }

  async publishRaw(topicName: string, value: Buffer | string, key: string | null = null): Promise<void> {
    this.assertOpen();
    this.append(
      topicName,
      key,
      withTraceContext(),
      typeof value === 'string' ? Buffer.from(value, 'utf8') : value,
    );
  }

  async subscribe<S extends z.ZodType>(
    topic: TopicDef<S>,
    options: SubscribeOptions,
    handler: Handler<S>,
  ): Promise<Subscription> {
    this.assertOpen();
    const log = this.topicLog(topic.name);
    let group = log.groups.get(options.group);
    if (!group) {
      group = new GroupState(log, options.fromBeginning ?? false);
      log.groups.set(options.group, group);
    }
    const member: Member = {
      pipeline: new ConsumePipeline({
        topic,
        group: options.group,
        handler,
        seen: this.seenFor(options.group),
        publishDeadLetter: async (deadLetter) =>
          this.append(
            Topics.deadLetter.name,
            Topics.deadLetter.keyOf(deadLetter),
            {},
            encodeEvent(Topics.deadLetter, deadLetter),
          ),
        logger: this.logger,
        maxAttempts: options.maxAttempts,
        retryBackoffMs: this.options.retryBackoffMs,
      }),
      inFlight: new Set(),
    };
    group.members.push(member);
    group.rebalance();
    this.scheduleDelivery(log);

    const joined = group;
    let closed = false;
    return {
      close: async () => {
        if (closed) return;
        closed = true;
        const index = joined.members.indexOf(member);
        if (index >= 0) joined.members.splice(index, 1);
        joined.rebalance();
        await Promise.allSettled([...member.inFlight]);
        // Partitions this member gave up go on with the remaining members (or wait, committed,
        // for the group's next member).
        this.scheduleDelivery(log);
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const inFlight: Promise<unknown>[] = [];
    for (const log of this.topics.values()) {
      for (const group of log.groups.values()) {
        for (const member of group.members) inFlight.push(...member.inFlight);
        group.members.length = 0;
        group.rebalance();
      }
    }
    await Promise.allSettled(inFlight);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the in-memory bus is closed');
  }

  private topicLog(name: string): TopicLog {
    let log = this.topics.get(name);
    if (!log) {
      log = new TopicLog(name, this.partitionCount);
      this.topics.set(name, log);
    }
    return log;
  }

  private seenFor(group: string): SeenIds {
    let seen = this.seenByGroup.get(group);
    if (!seen) {
      seen = new SeenIds(this.options.seenIdsCapacity);
      this.seenByGroup.set(group, seen);
    }
    return seen;
  }

  private append(
    topicName: string,
    key: string | null,
    headers: Readonly<Record<string, string>>,
    value: Buffer,
  ): void {
    const log = this.topicLog(topicName);
    log.partitions[log.partitionFor(key)].append({
      key,
      headers,
      value: ownedBytes(value),
      atMs: performance.now(),
    });
    this.scheduleDelivery(log);
  }

  /** Coalesces all appends of one tick into one delivery pass, off the publisher's call stack. */
  private scheduleDelivery(log: TopicLog): void {
    if (this.pendingDelivery.has(log)) return;
    this.pendingDelivery.add(log);
    setImmediate(() => {
      this.pendingDelivery.delete(log);
      if (this.closed) return;
      for (const group of log.groups.values()) {
        for (let p = 0; p < log.partitions.length; p++) void this.drain(log, group, p);
      }
      this.trim(log);
    });
  }

  private async drain(log: TopicLog, group: GroupState, p: number): Promise<void> {
    if (group.draining[p]) return;
    group.draining[p] = true;
    const partition = log.partitions[p];
    try {
      for (;;) {
        const owner = group.owners[p];
        if (this.closed || !owner || group.positions[p] >= partition.endOffset) return;
        const offset = group.positions[p];
        const stored = partition.at(offset);
        const processing = owner.pipeline.process({
          topic: log.name,
          key: stored.key,
          partition: p,
          offset: String(offset),
          headers: stored.headers,
          value: stored.value,
        });
        owner.inFlight.add(processing);
        try {
          await processing;
        } finally {
          owner.inFlight.delete(processing);
        }
        // Committed only now, after the handler succeeded or the message was dead-lettered.
        group.positions[p] = offset + 1;
      }
    } catch (error) {
      // Only a failed dead-letter publish gets here; the message stays uncommitted and the
      // partition resumes on the next delivery pass.
      this.logger.error('in-memory delivery stopped on a partition', {
        topic: log.name,
        partition: p,
        error: error instanceof Error ? error.message : String(error),
      });
    } finally {
      group.draining[p] = false;
      this.trim(log);
    }
  }

  private trim(log: TopicLog): void {
    const oldestMs = performance.now() - this.retainMs;
    log.partitions.forEach((partition, p) => {
      let keepFrom = partition.retainFrom(this.retainPerPartition, this.retainBytesPerPartition, oldestMs);
      for (const group of log.groups.values()) keepFrom = Math.min(keepFrom, group.positions[p]);
      partition.trimBelow(keepFrom);
    });
  }
}
