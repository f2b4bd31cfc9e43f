import type { z } from 'zod';
import {
  CompressionTypes,
  Kafka,
  Partitioners,
  logLevel as KafkaLogLevel,
  type Consumer,
  type EachBatchPayload,
  type IHeaders,
  type LogEntry,
  type Message,
  type Producer,
} from 'kafkajs';
import { Topics, type DeadLetter, type TopicDef } from '@fathom/contracts';
import type { Bus, Handler, PublishOptions, SubscribeOptions, Subscription } from './bus';
import { consoleBusLogger, type BusLogger } from './bus-logger';
import { ConsumePipeline } from './consume.pipeline';
import { encodeEvent } from './event.codec';
import { SeenIds } from './seen-ids.lru';
import { withTraceContext } from './trace-context.util';

export type KafkaBusLogLevel = 'nothing' | 'error' | 'warn' | 'info' | 'debug';

export interface KafkaConsumerTimings {
  /** kafkajs default 30000; tests use 3000 so a rebalance after a restart takes seconds. */
  readonly sessionTimeout?: number;
  readonly heartbeatInterval?: number;
  readonly maxWaitTimeInMs?: number;
  /** Partitions of one subscription handled at once (order is kept within each). Default 1. */
  readonly partitionsConsumedConcurrently?: number;
}

export interface KafkaBusOptions {
  readonly brokers: string[];
  readonly clientId: string;
  readonly consumer?: KafkaConsumerTimings;
  readonly logLevel?: KafkaBusLogLevel;
  readonly logger?: BusLogger;
  /** Partitions for the topics this bus tries to create on connect; the broker default if unset. */
  readonly topicPartitions?: number;
  /** Event ids remembered per group for idempotency. */
  readonly seenIdsCapacity?: number;
  readonly retryBackoffMs?: (attempt: number) => number;
  /** How long `subscribe` waits for the consumer to join its group. Default 60 s. */
  readonly joinTimeoutMs?: number;
  /** Delay before a consumer that crashed for good is started again. Default 1 s. */
  readonly restartDelayMs?: number;
}

const LOG_LEVELS: Record<KafkaBusLogLevel, KafkaLogLevel> = {
  nothing: KafkaLogLevel.NOTHING,
  error: KafkaLogLevel.ERROR,
  warn: KafkaLogLevel.WARN,
  info: KafkaLogLevel.INFO,
  debug: KafkaLogLevel.DEBUG,
};

// Topic creation goes through the admin API, which some brokers (the test mock) refuse; it must
// never hold up a service for long.
const CREATE_TOPICS_TIMEOUT_MS = 10_000;

/** kafkajs headers (Buffer, string or arrays of them) as the bus's string map; last value wins. */
export function headersToStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(headers ?? {})) {
    const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    if (value !== undefined) out[name] = value.toString();
  }
  return out;
}

/**
 * The bus over Kafka (kafkajs). Publishing is keyed with acks=-1; `publishMany` sends one gzip
 * produce request. Each subscription is its own kafkajs consumer in the given group; an offset
 * is committed only after the message was handled or dead-lettered (at-least-once). A consumer
 * that crashes is restarted, by kafkajs for retriable errors and by this class otherwise.
 * The idempotent producer is never enabled: the mock test broker cannot serve it.
 */
export class KafkaBus implements Bus {
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly logger: BusLogger;
  private readonly seenByGroup = new Map<string, SeenIds>();
  private readonly subscriptions = new Set<KafkaSubscription>();
  private producerReady: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly options: KafkaBusOptions) {
    this.logger = options.logger ?? consoleBusLogger;
    const logger = this.logger;
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: LOG_LEVELS[options.logLevel ?? 'warn'],
      logCreator: () => (entry: LogEntry) => forwardKafkaLog(logger, entry),
    });
    this.producer = this.kafka.producer({
      idempotent: false,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
  }

  async publish<S extends z.ZodType>(
    topic: TopicDef<S>,
    event: z.infer<S>,
    options: PublishOptions = {},
  ): Promise<void> {
    const value = encodeEvent(topic, event);
    await this.send(topic.name, [
      { key: options.key ?? topic.keyOf(event), value, headers: withTraceContext(options.headers) },
    ]);
  }

  async publishMany<S extends z.ZodType>(topic: TopicDef<S>, events: readonly z.infer<S>[]): Promise<void> {
    if (events.length === 0) return;
    const headers = withTraceContext();
    const messages = events.map((event) => ({
      key: topic.keyOf(event),
      value: encodeEvent(topic, event),
      headers,
    }));
    await this.send(topic.name, messages, CompressionTypes.GZIP);
  }

  async publishRaw(topicName: string, value: Buffer | string, key: string | null = null): Promise<void> {
    await this.send(topicName, [{ key, value, headers: withTraceContext() }]);
  }

  async subscribe<S extends z.ZodType>(
    topic: TopicDef<S>,
    options: SubscribeOptions,
    handler: Handler<S>,
  ): Promise<Subscription> {
    this.assertOpen();
    const pipeline = new ConsumePipeline({
      topic,
      group: options.group,
      handler,
      seen: this.seenFor(options.group),
      publishDeadLetter: (deadLetter) => this.publishDeadLetter(deadLetter),
      logger: this.logger,
      maxAttempts: options.maxAttempts,
      retryBackoffMs: this.options.retryBackoffMs,
    });
    const subscription = new KafkaSubscription(this.kafka, topic.name, options, pipeline, this.logger, {
      ...this.options.consumer,
      joinTimeoutMs: this.options.joinTimeoutMs ?? 60_000,
      restartDelayMs: this.options.restartDelayMs ?? 1000,
      onClosed: () => this.subscriptions.delete(subscription),
    });
    this.subscriptions.add(subscription);
    try {
      await subscription.start();
    } catch (error) {
      await subscription.close();
      throw error;
    }
    return subscription;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.subscriptions].map((subscription) => subscription.close()));
    if (this.producerReady) {
      await this.producerReady.catch(() => undefined);
      await this.producer.disconnect();
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the Kafka bus is closed');
  }

  private seenFor(group: string): SeenIds {
    let seen = this.seenByGroup.get(group);
    if (!seen) {
      seen = new SeenIds(this.options.seenIdsCapacity);
      this.seenByGroup.set(group, seen);
    }
    return seen;
  }

  private publishDeadLetter(deadLetter: DeadLetter): Promise<void> {
    const value = encodeEvent(Topics.deadLetter, deadLetter);
    return this.send(Topics.deadLetter.name, [
      { key: Topics.deadLetter.keyOf(deadLetter), value, headers: withTraceContext() },
    ]);
  }

  private async send(topic: string, messages: Message[], compression = CompressionTypes.None): Promise<void> {
    this.assertOpen();
    await this.connectProducer();
    await this.producer.send({ topic, acks: -1, compression, messages });
  }

  private connectProducer(): Promise<void> {
    if (!this.producerReady) {
      this.producerReady = (async () => {
        await this.producer.connect();
        await this.createTopics();
      })();
      // A failed connect is retried by the next send rather than cached forever.
      this.producerReady.catch(() => (this.producerReady = null));
    }
    return this.producerReady;
  }

  /** Tries to create every registry topic; a broker that refuses is logged, not fatal. */
  private async createTopics(): Promise<void> {
    const admin = this.kafka.admin({ retry: { retries: 0 } });
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        (async () => {
          await admin.connect();
          await admin.createTopics({
            waitForLeaders: false,
            topics: Object.values(Topics).map((topic) => ({
              topic: topic.name,
              numPartitions: this.options.topicPartitions ?? -1,
            })),
          });
        })(),
        new Promise((_, fail) => {
          timer = setTimeout(
            () => fail(new Error(`no answer in ${CREATE_TOPICS_TIMEOUT_MS} ms`)),
            CREATE_TOPICS_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (error) {
      this.logger.warn('could not create the Fathom topics; they must exist already', {
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
    } finally {
      clearTimeout(timer);
      await admin.disconnect().catch(() => undefined);
    }
  }
}

interface SubscriptionSettings extends KafkaConsumerTimings {
  readonly joinTimeoutMs: number;
  readonly restartDelayMs: number;
  readonly onClosed: () => void;
}

/** One kafkajs consumer in a group, kept alive across crashes until closed. */
class KafkaSubscription implements Subscription {
  private consumer: Consumer | null = null;
  private restartTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly topicName: string,
    private readonly options: SubscribeOptions,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    private readonly pipeline: ConsumePipeline<any>,
    private readonly logger: BusLogger,
    private readonly settings: SubscriptionSettings,
  ) {}

  /**
   * Starts the consumer and resolves once it joined its group and holds its partitions. A failed
   * join (the mock broker, for one, sometimes refuses a SyncGroup when members join at once) is
   * retried with a fresh consumer until `joinTimeoutMs` has passed.
   */
  async start(): Promise<void> {
    const deadline = Date.now() + this.settings.joinTimeoutMs;
    for (;;) {
      try {
        return await this.startOnce(deadline - Date.now());
      } catch (error) {
        const failed = this.consumer;
        await failed?.disconnect().catch(() => undefined);
        if (this.closed || Date.now() + this.settings.restartDelayMs >= deadline) throw error;
        this.logger.warn('consumer could not join its group; retrying', {
          topic: this.topicName,
          group: this.options.group,
          error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        });
        await new Promise((wake) => setTimeout(wake, this.settings.restartDelayMs));
        if (this.closed) throw error;
      }
    }
  }

  private async startOnce(joinTimeoutMs: number): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: this.options.group,
      sessionTimeout: this.settings.sessionTimeout,
      heartbeatInterval: this.settings.heartbeatInterval,
      maxWaitTimeInMs: this.settings.maxWaitTimeInMs,
      allowAutoTopicCreation: false,
    });
    this.consumer = consumer;
    let joinedOrFailed: { resolve: () => void; reject: (error: Error) => void } | null = null;
    const joined = new Promise<void>((resolve, reject) => (joinedOrFailed = { resolve, reject }));
    joined.catch(() => undefined); // awaited below, unless connect or run failed first
    const stopJoinListener = consumer.on(consumer.events.GROUP_JOIN, () => joinedOrFailed?.resolve());
    let hasJoined = false;
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      // Before the first join, start() retries; after it, kafkajs restarts the consumer itself
      // after a retriable error, and a consumer it gave up on is restarted here.
      if (!hasJoined) joinedOrFailed?.reject(payload.error);
      else if (!payload.restart) this.scheduleRestart(consumer, payload.error);
    });
    const timer = setTimeout(
      () =>
        joinedOrFailed?.reject(
          new Error(`consumer of ${this.topicName} did not join group ${this.options.group} in time`),
        ),
      joinTimeoutMs,
    );
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: this.topicName, fromBeginning: this.options.fromBeginning ?? false });
      await consumer.run({
        autoCommit: true,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: this.settings.partitionsConsumedConcurrently ?? 1,
        eachBatch: (payload) => this.handleBatch(payload),
      });
      await joined;
      hasJoined = true;
    } finally {
      clearTimeout(timer);
      stopJoinListener();
      joinedOrFailed = null;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.restartTimer);
    try {
      await this.consumer?.disconnect();
    } finally {
      this.settings.onClosed();
    }
  }

  private async handleBatch({
    batch,
    resolveOffset,
    heartbeat,
    isRunning,
    isStale,
  }: EachBatchPayload): Promise<void> {
    for (const message of batch.messages) {
      if (!isRunning() || isStale()) return;
      await this.pipeline.process({
        topic: batch.topic,
        partition: batch.partition,
        offset: message.offset,
        key: message.key ? message.key.toString('utf8') : null,
        headers: headersToStrings(message.headers),
        value: message.value,
      });
      // kafkajs commits resolved offsets after the batch (and on stop or rebalance): only
      // messages that were handled or dead-lettered are ever committed.
      resolveOffset(message.offset);
      await heartbeat();
    }
  }

  private scheduleRestart(crashed: Consumer, error: Error): void {
    if (this.closed || this.consumer !== crashed) return;
    this.logger.error('consumer crashed; restarting it', {
      topic: this.topicName,
      group: this.options.group,
      error: `${error.name}: ${error.message}`,
      inMs: this.settings.restartDelayMs,
    });
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      if (this.closed) return;
      crashed
        .disconnect()
        .catch(() => undefined)
        .then(() => (this.closed ? undefined : this.start()))
        .catch((restartError: unknown) => {
          if (this.consumer)
            this.scheduleRestart(
              this.consumer,
              restartError instanceof Error ? restartError : new Error(String(restartError)),
            );
        });
    }, this.settings.restartDelayMs);
  }
}

function forwardKafkaLog(logger: BusLogger, { namespace, level, log }: LogEntry): void {
  const { message, ...fields } = log;
  const text = `kafkajs ${namespace}: ${message}`;
  if (level <= KafkaLogLevel.ERROR) logger.error(text, fields);
  else if (level === KafkaLogLevel.WARN) logger.warn(text, fields);
  else logger.info?.(text, fields);
}
