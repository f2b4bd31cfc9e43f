import { randomUUID } from 'node:crypto';
import { Topics, type RunLifecycle } from '@fathom/contracts';
import { Inbox, describeBusContract, lifecycleEvent, recordingBusLogger } from './bus.contract-suite';
import { InMemoryBus } from './in-memory.transport';

describeBusContract(InMemoryBus.name, () => {
  const bus = new InMemoryBus({ logger: recordingBusLogger(), retryBackoffMs: () => 5 });
  return {
    bus,
    member: () => bus,
    group: (name) => `${name}-${randomUUID().slice(0, 8)}`,
    close: () => bus.close(),
  };
});

describe(InMemoryBus.name, () => {
  let sut: InMemoryBus;
  const campaignId = 'campaign-memory';

  beforeEach(() => {
    sut = new InMemoryBus({ logger: recordingBusLogger(), partitions: 2, retainPerPartition: 3 });
  });

  afterEach(() => sut.close());

  it('returns from publish before a slow handler ran', async () => {
    let release!: () => void;
    const gate = new Promise<void>((open) => (release = open));
    const inbox = new Inbox<RunLifecycle>();
    await sut.subscribe(Topics.runLifecycle, { group: 'slow' }, async (event) => {
      await gate;
      inbox.push(event);
    });
    for (let sent = 0; sent < 5; sent++)
      await sut.publish(Topics.runLifecycle, lifecycleEvent(campaignId, 'run-1', sent));
    expect(inbox.items).toHaveLength(0);
    release();
    await inbox.until((items) => items.length === 5, '5 events');
  });

  it('gives a new group only later events unless it starts from the beginning', async () => {
    await sut.publish(Topics.runLifecycle, lifecycleEvent(campaignId, 'run-1', 0));
    const latest = new Inbox<RunLifecycle>();
    const earliest = new Inbox<RunLifecycle>();
    await sut.subscribe(Topics.runLifecycle, { group: 'latest' }, (e) => latest.push(e));
    await sut.subscribe(Topics.runLifecycle, { group: 'earliest', fromBeginning: true }, (e) =>
      earliest.push(e),
    );
    await sut.publish(Topics.runLifecycle, lifecycleEvent(campaignId, 'run-1', 1));
    await earliest.until((items) => items.length === 2, 'both events');
    await latest.until((items) => items.length === 1, 'the later event');
    expect(latest.items.map((e) => e.counts.sent)).toEqual([1]);
  });

  it('resumes a group from its committed position after its last member left', async () => {
    const before = new Inbox<RunLifecycle>();
    const subscription = await sut.subscribe(Topics.runLifecycle, { group: 'resume' }, (e) => before.push(e));
    await sut.publish(Topics.runLifecycle, lifecycleEvent(campaignId, 'run-1', 0));
    await before.until((items) => items.length === 1, 'the first event');
    await subscription.close();
    await sut.publish(Topics.runLifecycle, lifecycleEvent(campaignId, 'run-1', 1));
    await sut.publish(Topics.runLifecycle, lifecycleEvent(campaignId, 'run-1', 2));
    const after = new Inbox<RunLifecycle>();
    await sut.subscribe(Topics.runLifecycle, { group: 'resume', fromBeginning: true }, (e) => after.push(e));
    await after.until((items) => items.length === 2, 'the two events published while away');
    expect(after.items.map((e) => e.counts.sent)).toEqual([1, 2]);
  });

  it('keeps messages a subscribed group has not consumed beyond the retention bound', async () => {
    let release!: () => void;
    const gate = new Promise<void>((open) => (release = open));
    const inbox = new Inbox<RunLifecycle>();
    await sut.subscribe(Topics.runLifecycle, { group: 'lagging' }, async (event) => {
      await gate;
      inbox.push(event);
    });
    // 20 events on one key (one partition), retention 3: the lagging group still gets all 20.
    for (let sent = 0; sent < 20; sent++)
      await sut.publish(Topics.runLifecycle, lifecycleEvent(campaignId, 'run-1', sent));
    release();
    await inbox.until((items) => items.length === 20, '20 events');
    expect(inbox.items.map((e) => e.counts.sent)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await new Promise((wake) => setTimeout(wake, 10)); // the last handler returns, the group commits
    // Once consumed, only the last 3 stay for a late group reading from the beginning.
    const late = new Inbox<RunLifecycle>();
    await sut.subscribe(Topics.runLifecycle, { group: 'late', fromBeginning: true }, (e) => late.push(e));
    await late.until((items) => items.length === 3, 'the retained tail');
    await late.quietFor(50);
    expect(late.items.map((e) => e.counts.sent)).toEqual([17, 18, 19]);
  });

  it('bounds what it keeps for late groups by bytes as well as by count', async () => {
    const one = Buffer.byteLength(JSON.stringify(lifecycleEvent(campaignId, 'run-1', 0)));
    const bus = new InMemoryBus({
      logger: recordingBusLogger(),
      partitions: 1,
      retainPerPartition: 1000,
      retainBytesPerPartition: Math.floor(one * 2.5),
    });
    try {
      const live = await liveGroup(bus);
      await publishAndConsume(bus, live, 0, 50);
      // Count retention alone would keep all 50; 2.5 events' worth of bytes keeps the last 2.
      expect(await retainedTail(bus)).toEqual([48, 49]);
    } finally {
      await bus.close();
    }
  });

  it('drops consumed messages older than its age bound, however few arrived since', async () => {
    const bus = new InMemoryBus({ logger: recordingBusLogger(), partitions: 1, retainMs: 40 });
    try {
      const live = await liveGroup(bus);
      await publishAndConsume(bus, live, 0, 3);
      await new Promise((wake) => setTimeout(wake, 80));
      await publishAndConsume(bus, live, 3, 4);
      // The count and byte bounds would keep all 4; the first 3 are 80 ms old, past 40 ms.
      expect(await retainedTail(bus)).toEqual([3]);
    } finally {
      await bus.close();
    }
  });

  it('keeps a copy of what was published: a publisher reusing its buffer changes nothing', async () => {
    const event = lifecycleEvent(campaignId, 'run-1', 5);
    // A small Buffer.from is a view of Node's shared pool, as a reused or pooled buffer would be.
    const bytes = Buffer.from(JSON.stringify(event), 'utf8');
    expect(bytes.buffer.byteLength).toBeGreaterThan(bytes.length);
    const inbox = new Inbox<RunLifecycle>();
    await sut.subscribe(Topics.runLifecycle, { group: 'copy' }, (e) => inbox.push(e));
    await sut.publishRaw(Topics.runLifecycle.name, bytes, 'run-1');
    bytes.fill(0x20); // delivery runs later on the event loop
    await inbox.until((items) => items.length === 1, 'the event');
    expect(inbox.items[0]).toEqual(event);
  });

  it('waits for the message in flight when a subscription closes', async () => {
    let release!: () => void;
    const gate = new Promise<void>((open) => (release = open));
    const finished: number[] = [];
    const subscription = await sut.subscribe(Topics.runLifecycle, { group: 'closing' }, async (event) => {
      await gate;
      finished.push(event.counts.sent);
    });
    await sut.publish(Topics.runLifecycle, lifecycleEvent(campaignId, 'run-1', 7));
    await new Promise((wake) => setImmediate(wake));
    const closed = subscription.close();
    setTimeout(release, 20);
    await closed;
    expect(finished).toEqual([7]);
  });

  it('refuses to publish once closed', async () => {
    await sut.close();
    await expect(sut.publishRaw(Topics.runLifecycle.name, '{}')).rejects.toThrow(/closed/);
  });
});

/** A group consuming the lifecycle topic from now on. */
async function liveGroup(bus: InMemoryBus): Promise<Inbox<RunLifecycle>> {
  const consumed = new Inbox<RunLifecycle>();
  await bus.subscribe(Topics.runLifecycle, { group: 'live' }, (e) => consumed.push(e));
  return consumed;
}

/** Publishes events `from`..`to - 1` (by `counts.sent`, one key) and waits until `live` has them. */
async function publishAndConsume(
  bus: InMemoryBus,
  live: Inbox<RunLifecycle>,
  from: number,
  to: number,
): Promise<void> {
  for (let sent = from; sent < to; sent++)
    await bus.publish(Topics.runLifecycle, lifecycleEvent('campaign-memory', 'run-1', sent));
  await live.until((items) => items.length === to, `${to} events`);
}

/** What a group joining now from the beginning gets: the retained events' `counts.sent`. */
async function retainedTail(bus: InMemoryBus): Promise<number[]> {
  await new Promise((wake) => setTimeout(wake, 10)); // the last handler returns, the group commits
  const late = new Inbox<RunLifecycle>();
  await bus.subscribe(Topics.runLifecycle, { group: 'late', fromBeginning: true }, (e) => late.push(e));
  await late.until((items) => items.length >= 1, 'the retained tail');
  await late.quietFor(50);
  return late.items.map((e) => e.counts.sent);
}
