import { randomUUID } from 'node:crypto';
import { context as otelContext, propagation, trace } from '@opentelemetry/api';
import { node as otelNode } from '@opentelemetry/sdk-node';
import { Topics, envelope, type DeadLetter, type RunLifecycle } from '@fathom/contracts';
import type { Bus, MessageContext, Subscription } from './bus';
import type { BusLogger } from './bus-logger';

/**
 * The semantics every transport must have, as one suite. A transport's spec calls
 * `describeBusContract` with a factory; each test gets fresh buses and unique ids, and filters
 * what it reads by its own campaign id, so tests may share topics (and a broker) safely.
 */
export interface BusUnderTest {
  /** The bus the test publishes on and subscribes with. */
  readonly bus: Bus;
  /**
   * A bus for a second member of a group: another client of the same broker for Kafka (like a
   * second process), the same bus for the in-memory transport (which lives in one process).
   */
  member(): Bus;
  /** A consumer group id unique to this test. */
  group(name: string): string;
  close(): Promise<void>;
}

/** Collects what a logger was told, so tests stay quiet and can assert on warnings. */
export function recordingBusLogger(): BusLogger & { readonly lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    warn: (message) => void lines.push(`warn ${message}`),
    error: (message) => void lines.push(`error ${message}`),
    info: () => undefined,
  };
}

/** Things a handler received; `until` resolves as soon as a condition holds (no polling). */
export class Inbox<T> {
  readonly items: T[] = [];
  private readonly waiters = new Set<() => void>();

  push(item: T): void {
    this.items.push(item);
    for (const wake of [...this.waiters]) wake();
  }

  until(condition: (items: readonly T[]) => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    if (condition(this.items)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!condition(this.items)) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(`timed out after ${timeoutMs} ms waiting for ${what}; have ${this.items.length} items`),
        );
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  /** Resolves after `ms` in which nothing more arrived (to catch late duplicates). */
  async quietFor(ms: number): Promise<void> {
    let seen = -1;
    while (seen !== this.items.length) {
      seen = this.items.length;
      await new Promise((wake) => setTimeout(wake, ms));
    }
  }
}

/** A valid run-lifecycle event; `sent` carries a sequence number the tests check order with. */
export function lifecycleEvent(campaignId: string, runId: string, sent: number): RunLifecycle {
  return {
    ...envelope(campaignId, runId),
    phase: 'shard-started',
    shard: { index: 0, count: 1 },
    generatorId: 'gen-contract',
    counts: { sent, completed: 0, errors: 0, dropped: 0, recordsPublished: 0, windowsPublished: 0 },
  };
}

export function describeBusContract(name: string, makeBus: () => BusUnderTest | Promise<BusUnderTest>): void {
  describe(`${name} (bus contract)`, () => {
    let sut: BusUnderTest;
    let campaignId: string;

    beforeEach(async () => {
      sut = await makeBus();
      campaignId = `campaign-${randomUUID()}`;
    });

    afterEach(async () => {
      await sut.close();
    });

    const ours = (event: RunLifecycle): boolean => event.campaignId === campaignId;

    /** Subscribes a collector of this test's lifecycle events. */
    async function collect(
      group: string,
      inbox: Inbox<RunLifecycle>,
      bus: Bus = sut.bus,
    ): Promise<Subscription> {
      return bus.subscribe(Topics.runLifecycle, { group, fromBeginning: true }, (event) => {
        if (ours(event)) inbox.push(event);
      });
    }

    /**
     * Subscribes a collector of the dead letters `group` wrote for messages keyed `key`. (A group
     * reading from the beginning also dead-letters the malformed messages of earlier tests.)
     */
    async function collectDeadLetters(
      group: string,
      key: string,
      into: Inbox<DeadLetter>,
    ): Promise<Subscription> {
      return sut.bus.subscribe(
        Topics.deadLetter,
        { group: sut.group('dlq-watch'), fromBeginning: true },
        (letter) => {
          if (letter.consumerGroup === group && letter.key === key) into.push(letter);
        },
      );
    }

    it('keeps the events of one key in order', async () => {
      const inbox = new Inbox<RunLifecycle>();
      await collect(sut.group('ordered'), inbox);
      const runs = ['run-a', 'run-b'];
      for (let sent = 0; sent < 40; sent++) {
        for (const run of runs)
          await sut.bus.publish(Topics.runLifecycle, lifecycleEvent(campaignId, run, sent));
      }
      await inbox.until((items) => items.length === 80, '80 events');
      for (const run of runs) {
        const sequence = inbox.items.filter((e) => e.runId === run).map((e) => e.counts.sent);
        expect(sequence).toEqual(Array.from({ length: 40 }, (_, i) => i));
      }
    });

    it('delivers every event to each of two groups', async () => {
      const first = new Inbox<RunLifecycle>();
      const second = new Inbox<RunLifecycle>();
      await Promise.all([collect(sut.group('first'), first), collect(sut.group('second'), second)]);
      const events = Array.from({ length: 30 }, (_, i) => lifecycleEvent(campaignId, `run-${i}`, i));
      await sut.bus.publishMany(Topics.runLifecycle, events);
      await first.until((items) => items.length === 30, 'group one: 30 events');
      await second.until((items) => items.length === 30, 'group two: 30 events');
      const ids = events.map((e) => e.id).sort();
      expect(first.items.map((e) => e.id).sort()).toEqual(ids);
      expect(second.items.map((e) => e.id).sort()).toEqual(ids);
    });

    it('splits one group between its members with no duplicate and no loss', async () => {
      const group = sut.group('shared');
      const deliveries = new Inbox<{ member: 'a' | 'b'; id: string }>();
      const member = (name: 'a' | 'b') => (event: RunLifecycle) => {
        if (ours(event)) deliveries.push({ member: name, id: event.id });
      };
      await Promise.all([
        sut.bus.subscribe(Topics.runLifecycle, { group, fromBeginning: true }, member('a')),
        sut.member().subscribe(Topics.runLifecycle, { group, fromBeginning: true }, member('b')),
      ]);
      const events = Array.from({ length: 60 }, (_, i) =>
        lifecycleEvent(campaignId, `run-${randomUUID()}`, i),
      );
      await sut.bus.publishMany(Topics.runLifecycle, events);
      await deliveries.until((items) => items.length >= 60, '60 events over both members');
      await deliveries.quietFor(300);
      expect(deliveries.items.map((d) => d.id).sort()).toEqual(events.map((e) => e.id).sort());
      expect(deliveries.items.filter((d) => d.member === 'a').length).toBeGreaterThan(0);
      expect(deliveries.items.filter((d) => d.member === 'b').length).toBeGreaterThan(0);
    });

    it('dead-letters a message that is not JSON, with its reason, and consumes the next', async () => {
      const group = sut.group('invalid-json');
      const inbox = new Inbox<RunLifecycle>();
      const deadLetters = new Inbox<DeadLetter>();
      const runId = `run-${randomUUID()}`;
      await Promise.all([collectDeadLetters(group, runId, deadLetters), collect(group, inbox)]);
      await sut.bus.publishRaw(Topics.runLifecycle.name, '{"id": not json', runId);
      await sut.bus.publish(Topics.runLifecycle, lifecycleEvent(campaignId, runId, 1));
      await inbox.until((items) => items.length === 1, 'the valid event after the malformed one');
      await deadLetters.until((items) => items.length === 1, 'a dead letter');
      const [letter] = deadLetters.items;
      expect(letter).toMatchObject({
        reason: 'invalid-json',
        originalTopic: Topics.runLifecycle.name,
        consumerGroup: group,
        key: runId,
        attempts: 0,
        campaignId: null,
      });
      expect(Buffer.from(letter.payloadBase64, 'base64').toString('utf8')).toBe('{"id": not json');
      expect(letter.error.length).toBeGreaterThan(0);
    });

    it('dead-letters a message that fails its schema, naming the field, and consumes the next', async () => {
      const group = sut.group('schema-mismatch');
      const inbox = new Inbox<RunLifecycle>();
      const deadLetters = new Inbox<DeadLetter>();
      const runId = `run-${randomUUID()}`;
      await Promise.all([collectDeadLetters(group, runId, deadLetters), collect(group, inbox)]);
      const bad = { ...lifecycleEvent(campaignId, runId, 0), phase: 'shard-exploded' };
      await sut.bus.publishRaw(Topics.runLifecycle.name, JSON.stringify(bad), runId);
      await sut.bus.publish(Topics.runLifecycle, lifecycleEvent(campaignId, runId, 1));
      await inbox.until((items) => items.length === 1, 'the valid event after the invalid one');
      await deadLetters.until((items) => items.length === 1, 'a dead letter');
      const [letter] = deadLetters.items;
      expect(letter).toMatchObject({ reason: 'schema-mismatch', campaignId, runId, attempts: 0 });
      expect(letter.error).toContain('phase');
      expect(JSON.parse(Buffer.from(letter.payloadBase64, 'base64').toString('utf8'))).toEqual(bad);
      expect(inbox.items[0].counts.sent).toBe(1);
    });

    it('dead-letters an event whose handler fails maxAttempts times, then handles the next', async () => {
      const group = sut.group('handler-fails');
      const deadLetters = new Inbox<DeadLetter>();
      const runId = `run-${randomUUID()}`;
      const poison = lifecycleEvent(campaignId, runId, 0);
      const attempts: number[] = [];
      const handled = new Inbox<RunLifecycle>();
      await Promise.all([
        collectDeadLetters(group, runId, deadLetters),
        sut.bus.subscribe(
          Topics.runLifecycle,
          { group, fromBeginning: true, maxAttempts: 2 },
          (event, context) => {
            if (!ours(event)) return;
            if (event.id === poison.id) {
              attempts.push(context.attempt);
              throw new Error('analyzer cannot take this event');
            }
            handled.push(event);
          },
        ),
      ]);
      await sut.bus.publish(Topics.runLifecycle, poison);
      await sut.bus.publish(Topics.runLifecycle, lifecycleEvent(campaignId, runId, 1));
      await handled.until((items) => items.length === 1, 'the event after the poison one');
      await deadLetters.until((items) => items.length === 1, 'a dead letter');
      expect(attempts).toEqual([1, 2]);
      expect(deadLetters.items[0]).toMatchObject({
        reason: 'handler-failed',
        attempts: 2,
        error: 'analyzer cannot take this event',
        campaignId,
        runId,
      });
    });

    it('handles an event id once per group when it arrives twice', async () => {
      const inbox = new Inbox<RunLifecycle>();
      await collect(sut.group('idempotent'), inbox);
      const runId = `run-${randomUUID()}`;
      const twice = lifecycleEvent(campaignId, runId, 0);
      await sut.bus.publish(Topics.runLifecycle, twice);
      await sut.bus.publish(Topics.runLifecycle, twice);
      await sut.bus.publish(Topics.runLifecycle, lifecycleEvent(campaignId, runId, 1));
      await inbox.until((items) => items.some((e) => e.counts.sent === 1), 'the event after the duplicate');
      expect(inbox.items.map((e) => e.counts.sent)).toEqual([0, 1]);
    });

    it('refuses to publish an event that fails its schema', async () => {
      const bad = { ...lifecycleEvent(campaignId, 'run-x', 0), phase: 'nonsense' } as unknown as RunLifecycle;
      await expect(sut.bus.publish(Topics.runLifecycle, bad)).rejects.toThrow(/fathom\.run\.lifecycle\.v1/);
    });

    describe('with an OpenTelemetry SDK registered', () => {
      let provider: InstanceType<typeof otelNode.NodeTracerProvider>;

      beforeAll(() => {
        provider = new otelNode.NodeTracerProvider();
        provider.register(); // W3C trace-context propagator + AsyncLocalStorage context manager
      });

      afterAll(async () => {
        await provider.shutdown();
        trace.disable();
        otelContext.disable();
        propagation.disable();
      });

      it('carries headers and the trace context from publisher to handler', async () => {
        const received = new Inbox<{ headers: MessageContext['headers']; traceId: string | undefined }>();
        await sut.bus.subscribe(
          Topics.runLifecycle,
          { group: sut.group('traced'), fromBeginning: true },
          (event, context) => {
            if (!ours(event)) return;
            received.push({
              headers: context.headers,
              traceId: trace.getSpanContext(otelContext.active())?.traceId,
            });
          },
        );
        const tracer = trace.getTracer('bus.contract-suite');
        const traceId = await tracer.startActiveSpan('publish', async (span) => {
          await sut.bus.publish(Topics.runLifecycle, lifecycleEvent(campaignId, 'run-traced', 0), {
            headers: { 'x-fathom-shard': '3' },
          });
          span.end();
          return span.spanContext().traceId;
        });
        await received.until((items) => items.length === 1, 'the traced event');
        const [{ headers, traceId: handlerTraceId }] = received.items;
        expect(headers['x-fathom-shard']).toBe('3');
        expect(headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]$`));
        expect(handlerTraceId).toBe(traceId);
      });
    });
  });
}
