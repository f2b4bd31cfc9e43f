import type { Bus, Handler, Subscription } from '@fathom/bus';
import {
  Detectors,
  ShadowCampaignInputSchema,
  Topics,
  envelope,
  shadowRunId,
  type BreakerChange,
  type BreakerState,
  type DetectorSignal,
  type ShadowLiveStatus,
  type ShadowRequest,
  type ShadowSample,
  type TopicDef,
} from '@fathom/contracts';
import type { z } from 'zod';
import { ShadowLiveRunner, type LiveRunnerDeps } from './shadow-live.runner';

/** Hands each published message to the topic's handlers at once; keeps what was published. */
class FakeBus implements Bus {
  readonly handlers = new Map<string, Array<Handler<z.ZodType>>>();
  readonly published: Array<{ topic: string; event: unknown }> = [];

  async publish<S extends z.ZodType>(topic: TopicDef<S>, event: z.infer<S>): Promise<void> {
    this.published.push({ topic: topic.name, event });
  }
  async publishMany<S extends z.ZodType>(topic: TopicDef<S>, events: readonly z.infer<S>[]): Promise<void> {
    for (const event of events) await this.publish(topic, event);
  }
  async publishRaw(): Promise<void> {
    throw new Error('not used by the runner');
  }
  async subscribe<S extends z.ZodType>(
    topic: TopicDef<S>,
    _options: unknown,
    handler: Handler<S>,
  ): Promise<Subscription> {
    const list = this.handlers.get(topic.name) ?? [];
    list.push(handler as Handler<z.ZodType>);
    this.handlers.set(topic.name, list);
    return { close: async () => void this.handlers.delete(topic.name) };
  }
  async close(): Promise<void> {}

  deliver(topic: string, event: unknown): void {
    for (const handler of this.handlers.get(topic) ?? [])
      void handler(event, { topic, key: null, partition: null, offset: null, headers: {}, attempt: 1 });
  }
}

const ID = 'shadow-1';

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}
const WINDOW_MS = 1000;

describe(ShadowLiveRunner.name, () => {
  let bus: FakeBus;
  let replayed: ShadowRequest[];
  let sut: ShadowLiveRunner;

  const observation = { ok: true, e2eMs: 100, ttftMs: 10, hallucinationRisk: 0, refused: false };
  const sampleOf = (request: ShadowRequest): ShadowSample => ({
    endpoint: request.endpoint,
    intent: request.intent ?? 'unlabelled',
    primary: observation,
    secondary: observation,
    candidate: observation,
    similarityPrimarySecondary: null,
    similarityPrimaryCandidate: null,
  });

  let seq = 0;
  /** Offers `n` requests of one intent, as the gateway's copies arrive on the topic. */
  const offer = (n: number, intent = 'orders'): void => {
    for (let i = 0; i < n; i++)
      bus.deliver(Topics.shadowRequest.name, {
        id: `r-${seq++}`,
        schemaVersion: 1,
        emittedAt: Date.now(),
        source: 'mirror',
        endpoint: '/v1/chat/completions',
        campaignId: ID,
        intent,
        body: { messages: [{ role: 'user', content: 'hi' }] },
      } satisfies ShadowRequest);
  };
  const breaker = (from: BreakerState, to: BreakerState, runId = shadowRunId(ID)): void =>
    bus.deliver(Topics.breaker.name, {
      ...envelope(ID, runId),
      breaker: { target: 'http://candidate:8000/v1', layer: 'llm', node: 'candidate:8000' },
      from,
      to,
      reason: 'shadow-regression: refusals +0.5',
    } satisfies BreakerChange);
  /** Ends the current window (its replays settle first). */
  const nextWindow = () => jest.advanceTimersByTimeAsync(WINDOW_MS);

  let pruned: number[];
  let published: number[];
  let statuses: ShadowLiveStatus[];
  /** The candidate's e2e latency in the samples replayed (100 ms: as primary and secondary). */
  let candidateE2eMs: number;
  /** Whether the candidate answers the replays. */
  let candidateOk: boolean;
  /** The samples storage holds, oldest first, with their seq (as the service's repository would). */
  let storage: Array<{ seq: number; request: ShadowRequest; sample: ShadowSample }>;
  let storedSeq: number;
  /** The deps of the runner started last; a crash mutes them. */
  let alive: { value: boolean };

  /** A live campaign's config; `source` overrides the live source (caps far above what a test offers). */
  const liveConfig = (source: Record<string, unknown> = {}) =>
    ShadowCampaignInputSchema.parse({
      name: 'live',
      primary: { baseUrl: 'http://primary:8000/v1' },
      secondary: { baseUrl: 'http://secondary:8000/v1' },
      candidate: { baseUrl: 'http://candidate:8000/v1' },
      model: 'm',
      // Caps far above what a test offers: only the breakers shed.
      source: { type: 'live', maxRatePerSec: 10_000, windowMs: WINDOW_MS, ...source },
      concurrency: 256,
    });

  /** A started runner; `source` overrides the live source (caps far above what a test offers). */
  async function start(
    source: Record<string, unknown> = {},
    resumed?: ConstructorParameters<typeof ShadowLiveRunner>[3],
  ): Promise<void> {
    const config = liveConfig(source);
    const live = { value: true };
    alive = live;
    const deps: LiveRunnerDeps = {
      bus,
      replay: async (request) => {
        replayed.push(request);
        const base = sampleOf(request);
        const sample = { ...base, candidate: { ...base.candidate, ok: candidateOk, e2eMs: candidateE2eMs } };
        // Other campaigns' samples take seqs too.
        storedSeq += 3;
        storage.push({ seq: storedSeq, request, sample });
        return { seq: storedSeq, sample };
      },
      publish: async (status, samples) => {
        if (!live.value) return;
        published.push(samples);
        statuses.push(status);
      },
      storedAfter: async (afterSeq, limit, pick) => {
        const after = storage.filter((s) => s.seq > afterSeq);
        const chosen = pick === 'newest' ? after.slice(-limit) : shuffled(after).slice(0, limit);
        return {
          total: after.length,
          samples: chosen.sort((a, b) => a.seq - b.seq).map(({ seq, sample }) => ({ seq, sample })),
        };
      },
      prune: async (keep) => {
        pruned.push(keep);
        return storage.splice(0, Math.max(0, storage.length - keep)).length;
      },
      startLinked: async () => null,
      log: () => {},
    };
    sut = new ShadowLiveRunner(ID, config as never, deps, resumed);
    await sut.start();
  }

  beforeEach(async () => {
    jest.useFakeTimers();
    bus = new FakeBus();
    replayed = [];
    pruned = [];
    published = [];
    statuses = [];
    storage = [];
    storedSeq = 0;
    candidateE2eMs = 100;
    candidateOk = true;
    await start();
  });

  afterEach(async () => {
    await sut.stop();
    jest.useRealTimers();
  });

  it('replays every offered request while the analyzer breaker is closed', () => {
    offer(30);
    expect(replayed).toHaveLength(30);
    expect(sut.snapshot().shed.analyzerBreaker).toBe(0);
  });

  it('sheds all but 10 replays per group and window while the analyzer breaker is open', async () => {
    breaker('closed', 'open');
    offer(30, 'orders');
    offer(4, 'refunds');
    expect(replayed).toHaveLength(14);
    expect(sut.snapshot().shed.analyzerBreaker).toBe(20);
    expect(sut.snapshot().analyzerBreaker?.state).toBe('open');
    // A new window, a new trickle.
    await nextWindow();
    offer(30, 'orders');
    expect(replayed).toHaveLength(24);
    expect(sut.snapshot().shed.analyzerBreaker).toBe(40);
  });

  it('probes at most 8 groups a window while the analyzer breaker is open', () => {
    breaker('closed', 'open');
    for (let g = 0; g < 10; g++) offer(1, `intent-${g}`);
    expect(new Set(replayed.map((r) => r.intent)).size).toBe(8);
    expect(sut.snapshot().shed.analyzerBreaker).toBe(2);
  });

  it('keeps judged windows coming while open, so the analyzer can go half-open and close', async () => {
    breaker('closed', 'open');
    offer(30);
    await nextWindow();
    const signals = bus.published
      .filter((p) => p.topic === Topics.semanticSignal.name)
      .map((p) => p.event as DetectorSignal);
    expect(signals).toHaveLength(1);
    expect(signals[0]).toMatchObject({
      detector: Detectors.shadowRegression,
      runId: shadowRunId(ID),
      severity: 'info',
      figures: expect.objectContaining({ samples: 10 }),
    });
  });

  it('lets the same trickle through half-open, and everything once the analyzer closes it', async () => {
    breaker('closed', 'open');
    await nextWindow();
    breaker('open', 'half-open');
    offer(30);
    expect(replayed).toHaveLength(10);
    breaker('half-open', 'closed');
    offer(30);
    expect(replayed).toHaveLength(40);
    expect(sut.snapshot().shed.analyzerBreaker).toBe(20);
    // Reopened by a failed probe: the trickle again (this window's 10 already went).
    breaker('half-open', 'open');
    offer(5);
    expect(replayed).toHaveLength(40);
  });

  it('counts a breaker change published twice (an analyzer restarted before storing it) once', () => {
    const change = {
      ...envelope(ID, shadowRunId(ID)),
      breaker: { target: 'http://candidate:8000/v1', layer: 'llm', node: 'candidate:8000' },
      from: 'closed',
      to: 'open',
      reason: 'shadow-regression: refusals +0.5',
    } satisfies BreakerChange;
    bus.deliver(Topics.breaker.name, change);
    bus.deliver(Topics.breaker.name, { ...change });
    expect(sut.snapshot().analyzerBreaker?.changes.map((c) => `${c.from} -> ${c.to}`)).toEqual([
      'closed -> open',
    ]);
    breaker('open', 'half-open');
    expect(sut.snapshot().analyzerBreaker?.changes).toHaveLength(2);
  });

  it('ignores breaker changes of other runs and campaigns', () => {
    breaker('closed', 'open', 'some-load-run');
    breaker('closed', 'open', shadowRunId('another-shadow'));
    offer(30);
    expect(replayed).toHaveLength(30);
    expect(sut.snapshot().analyzerBreaker).toEqual({ state: 'closed', changes: [] });
  });

  it('prunes stored samples back to keepSamples once 100 more were added', async () => {
    offer(250);
    await jest.advanceTimersByTimeAsync(0);
    expect(pruned).toEqual([10_000, 10_000]);
    expect(storage).toHaveLength(250);
  });

  it('prunes a small keepSamples once a tenth more were added, and reports what is stored', async () => {
    await sut.stop();
    await start({ keepSamples: 20 });
    let most = 0;
    for (let i = 0; i < 37; i++) {
      offer(1);
      await jest.advanceTimersByTimeAsync(0);
      most = Math.max(most, storage.length);
    }
    // Every 2 samples (20 / 10), each back to the newest 20.
    expect(pruned).toEqual(Array.from({ length: 18 }, () => 20));
    // Between two prunes storage holds at most one more than keepSamples.
    expect(most).toBe(21);
    expect(storage.at(-1)?.request).toBe(replayed.at(-1));
    await nextWindow();
    expect(published.at(-1)).toBe(storage.length);
    expect(storage).toHaveLength(21);
  });

  it('counts what storage holds when replays end while a prune runs', async () => {
    await sut.stop();
    await start({ keepSamples: 20 });
    // 30 in flight at once: each stored before the prunes they trigger delete.
    offer(30);
    await nextWindow();
    expect(storage).toHaveLength(20);
    expect(published.at(-1)).toBe(20);
  });

  describe('resumed from the report an earlier runner published', () => {
    /** What a first runner published after two windows, the second regressed (one in a row). */
    async function earlierReport(): Promise<{ status: ShadowLiveStatus; samples: number }> {
      offer(6);
      await nextWindow();
      candidateE2eMs = 900;
      offer(6);
      await nextWindow();
      await sut.stop();
      candidateE2eMs = 100;
      return { status: statuses.at(-1)!, samples: published.at(-1)! };
    }

    it('goes on counting from its counters and windows instead of zero', async () => {
      const earlier = await earlierReport();
      expect(earlier.status).toMatchObject({ offered: 12, replayed: 12, tier: 'ok' });

      await start({}, { ...earlier, createdAt: Date.now() - 5000 });
      offer(5);
      await nextWindow();

      const status = statuses.at(-1)!;
      expect(status).toMatchObject({ offered: 17, replayed: 17 });
      expect(published.at(-1)).toBe(earlier.samples + 5);
      expect(status.windows.slice(0, earlier.status.windows.length)).toEqual(earlier.status.windows);
      expect(status.windows.at(-1)?.samples).toBe(5);
    });

    it('counts the regressed windows in a row it resumed with towards the tier', async () => {
      const earlier = await earlierReport();
      // The stop closed a last, empty window after it: no evidence, the run goes on past it.
      expect(earlier.status.windows.map((w) => [w.samples, w.regressed])).toEqual([
        [6, false],
        [6, true],
        [0, false],
      ]);
      expect(earlier.status.tier).toBe('ok');

      // The second regressed window in a row (onRegression.windows = 2) turns the tier.
      await start({}, { ...earlier, createdAt: Date.now() });
      candidateE2eMs = 900;
      offer(6);
      await nextWindow();
      expect(statuses.at(-1)?.tier).toBe('regressed');
    });

    /** An orchestrator dying: nothing of its runner is written after its last publish. */
    async function crash(): Promise<{ status: ShadowLiveStatus; samples: number }> {
      alive.value = false;
      await sut.stop();
      return { status: statuses.at(-1)!, samples: published.at(-1)! };
    }

    it('rebuilds the window in progress from the samples stored after the last published one', async () => {
      offer(6);
      await nextWindow();
      offer(4);
      await jest.advanceTimersByTimeAsync(300);
      const earlier = await crash();
      expect(earlier.status.windows.map((w) => w.samples)).toEqual([6]);

      await start({}, { ...earlier, createdAt: Date.now() });
      offer(2);
      await nextWindow();

      const window = statuses.at(-1)!.windows.at(-1)!;
      expect(window.samples).toBe(6);
      // From where the last published window ended: its samples were replayed since.
      expect(window.startedAt).toBe(earlier.status.windows[0].endedAt);
    });

    it("rebuilds the hour's pool from the samples stored since the hour began", async () => {
      await sut.stop();
      const createdAt = Date.now();
      await start({ windowMs: 600_000 });
      offer(6);
      await jest.advanceTimersByTimeAsync(600_000);
      offer(4);
      await jest.advanceTimersByTimeAsync(0);
      const earlier = await crash();
      expect(earlier.status.hours).toEqual([]);

      await start({ windowMs: 600_000 }, { ...earlier, createdAt });
      offer(2);
      await jest.advanceTimersByTimeAsync(3_600_000 - (Date.now() - createdAt));

      expect(statuses.at(-1)!.hours.map((h) => [h.startedAt, h.samples])).toEqual([[createdAt, 12]]);
    });

    it('keeps the candidate breaker it published open, then probes once the cool-down ends', async () => {
      candidateOk = false;
      offer(5);
      await nextWindow();
      const earlier = await crash();
      expect(earlier.status.candidateBreaker).toBe('open');
      candidateOk = true;

      await start({}, { ...earlier, createdAt: Date.now() });
      offer(3);
      expect(replayed).toHaveLength(5);
      expect(sut.snapshot().shed.breaker).toBe(3);
      // Open for 10 s from the fifth failure, one second before the crash.
      await jest.advanceTimersByTimeAsync(9000);
      offer(1);
      expect(replayed).toHaveLength(6);
    });

    it('counts the candidate failures stored after the last published status towards its breaker', async () => {
      candidateOk = false;
      offer(3);
      await nextWindow();
      // The fourth and fifth failures are stored, never published.
      offer(2);
      await jest.advanceTimersByTimeAsync(0);
      const earlier = await crash();
      expect(earlier.status.candidateBreaker).toBe('closed');
      candidateOk = true;

      await start({}, { ...earlier, createdAt: Date.now() });
      offer(3);
      expect(sut.snapshot().candidateBreaker).toBe('open');
      expect(replayed).toHaveLength(5);
    });

    it('publishes its counts every 5 s between windows while they change, so a crash loses at most that', async () => {
      await sut.stop();
      await start({ windowMs: 60_000 });
      offer(7);
      await jest.advanceTimersByTimeAsync(5000);
      const publishes = statuses.length;
      await jest.advanceTimersByTimeAsync(10_000);
      expect(statuses).toHaveLength(publishes);
      const earlier = await crash();
      expect(earlier.status).toMatchObject({ offered: 7, replayed: 7, windows: [] });

      await start({ windowMs: 60_000 }, { ...earlier, createdAt: Date.now() });
      offer(1);
      await jest.advanceTimersByTimeAsync(5000);
      expect(statuses.at(-1)).toMatchObject({ offered: 8, replayed: 8, windows: [] });
      expect(published.at(-1)).toBe(8);
    });

    it('counts no sample twice after a report stored before checkpoints and a second crash', async () => {
      offer(6);
      await nextWindow();
      const first = await crash();
      const withoutCheckpoint = { ...first, status: { ...first.status, checkpoint: undefined } };

      await start({ windowMs: 60_000 }, { ...withoutCheckpoint, createdAt: Date.now() });
      offer(2);
      await jest.advanceTimersByTimeAsync(5000);
      const second = await crash();
      await start({ windowMs: 60_000 }, { ...second, createdAt: Date.now() });
      offer(1);
      await jest.advanceTimersByTimeAsync(60_000);

      expect(statuses.at(-1)!.windows.map((w) => w.samples)).toEqual([6, 3]);
    });

    it('publishes nothing when it could not read the stored samples back, for the next take-over', async () => {
      offer(6);
      await nextWindow();
      const earlier = await crash();
      const publishes = statuses.length;
      const runner = new ShadowLiveRunner(
        ID,
        liveConfig() as never,
        {
          bus,
          replay: async () => null,
          publish: async (status) => void statuses.push(status),
          storedAfter: () => Promise.reject(new Error('store unreachable')),
          prune: async () => 0,
          startLinked: async () => null,
          log: () => {},
        },
        { ...earlier, createdAt: Date.now() },
      );

      await expect(runner.start()).rejects.toThrow('store unreachable');
      await runner.stop();
      expect(statuses).toHaveLength(publishes);
    });

    it('starts from nothing without a report, as a new campaign', async () => {
      await earlierReport();
      await start();
      candidateE2eMs = 900;
      offer(6);
      await nextWindow();
      expect(statuses.at(-1)).toMatchObject({ offered: 6, tier: 'ok' });
      expect(statuses.at(-1)?.windows).toHaveLength(1);
    });
  });
});
