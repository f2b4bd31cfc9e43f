import { randomUUID } from 'node:crypto';
import { createBus, type Bus } from '@fathom/bus';
import { RunEventRepository, openDatabase, type Database } from '@fathom/storage';
import {
  CampaignSpecSchema,
  Topics,
  envelope,
  type CampaignSpec,
  type SloTierChange,
  type TelemetryWindow,
} from '@fathom/contracts';
import { decodeHistogram, encodeHistogram, mergeWindows } from '@fathom/load';
import { waitFor } from '@fathom/testing';
import { createFathomApp, type FathomApp } from '@fathom/runtime';

/**
 * The analyzer restarted mid-run picks the run's SLO tier up where it was: it announces no tier
 * twice and takes a change across the restart for a change, not a first assignment. Analyzer
 * only, on the in-memory bus and PGlite; the test publishes the run's plan and its telemetry
 * windows itself, one every 600 ms of wall time so that each is judged (the analyzer evaluates a
 * run at most every 500 ms). A window spans 10 s of event time, so the default tier policy's
 * spans (5 s, 30 s, 5 min) turn within a few windows. Default tiers: P99 100 ms holds SLO-0,
 * P99 1 s misses SLO-0 (800 ms) and holds SLO-1 (1.2 s).
 */
const WINDOW_MS = 10_000;

describe('analyzer restart mid-run', () => {
  jest.setTimeout(90_000);
  let bus: Bus;
  let db: Database;
  let analyzer: FathomApp | null = null;
  const announced: SloTierChange[] = [];

  const startAnalyzer = async () => {
    analyzer = await createFathomApp({ services: ['analyzer'], bus, database: db, logLevels: false });
  };
  const restartAnalyzer = async () => {
    await analyzer?.close();
    await startAnalyzer();
  };

  beforeAll(async () => {
    bus = createBus({ kind: 'memory' });
    db = await openDatabase({ kind: 'pglite', dataDir: null });
    await bus.subscribe(Topics.sloTier, { group: `test-tiers-${randomUUID()}` }, async (e) => {
      announced.push(e);
    });
    await startAnalyzer();
  });

  afterAll(async () => {
    await analyzer?.close();
    await bus?.close();
    await db?.close();
  });

  const spec: CampaignSpec = CampaignSpecSchema.parse({
    name: 'tier restart',
    target: { baseUrl: 'http://127.0.0.1:9/v1' },
    scenario: { type: 'chat', prompts: ['hello'] },
    load: { concurrency: 1, durationMs: 600_000 },
  });
  const histogramOf = (ms: number, count: number) => {
    const h = decodeHistogram(mergeWindows([]).histogramsUs.e2e);
    h.recordValueWithCount(Math.round(ms * 1000), count);
    return encodeHistogram(h);
  };

  /** A run whose windows the test publishes; `send` publishes the next `n` windows at `p99Ms`. */
  const run = async () => {
    const campaignId = randomUUID();
    const runId = randomUUID();
    const t0 = Date.now();
    let seq = 0;
    await bus.publish(Topics.runShard, {
      ...envelope(campaignId, runId),
      kind: 'start-shard',
      shard: { index: 0, count: 1 },
      spec,
      trigger: 'api',
    });
    const send = async (n: number, p99Ms: number) => {
      for (let i = 0; i < n; i++, seq++) {
        const latency = histogramOf(p99Ms, 100);
        const window: TelemetryWindow = {
          ...envelope(campaignId, runId, t0 + WINDOW_MS * (seq + 1)),
          generatorId: 'g',
          shard: 0,
          windowStart: t0 + WINDOW_MS * seq,
          windowMs: WINDOW_MS,
          seq,
          requests: 100,
          errors: 0,
          errorClasses: {},
          dropped: 0,
          late: 0,
          inputTokens: 0,
          outputTokens: 0,
          histogramsUs: { e2e: latency, correctedE2e: latency, ttft: latency, itl: latency },
        };
        await bus.publish(Topics.telemetryWindow, window);
        await new Promise((resolve) => setTimeout(resolve, 600));
      }
    };
    return { campaignId, runId, send };
  };
  /** Every announcement seen for the run, in order (a repeat would show twice). */
  const changesOf = (runId: string) =>
    announced.filter((e) => e.runId === runId).map((e) => `${e.from ?? 'null'} -> ${e.to}`);
  const waitForChanges = (runId: string, count: number, description: string) =>
    waitFor(() => changesOf(runId).length >= count, { timeoutMs: 20_000, intervalMs: 50, description });

  it('announces each tier change once across two restarts, none repeated and none taken for an assignment', async () => {
    const { runId, send } = await run();

    await send(3, 100);
    await waitForChanges(runId, 1, 'the first tier assigned');
    expect(changesOf(runId)).toEqual(['null -> SLO-0']);

    // Restart while the run is in SLO-0; it then degrades: a change from SLO-0, not an assignment.
    await restartAnalyzer();
    await send(3, 1_000);
    await waitForChanges(runId, 2, 'the change to SLO-1');
    expect(changesOf(runId)).toEqual(['null -> SLO-0', 'SLO-0 -> SLO-1']);

    // Restart while the run is in SLO-1 and stays there: nothing to announce.
    await restartAnalyzer();
    await send(3, 1_000);
    expect(changesOf(runId)).toEqual(['null -> SLO-0', 'SLO-0 -> SLO-1']);

    // It recovers once every short span holds only fast requests, after 3 evaluations in a row.
    await send(6, 100);
    await waitForChanges(runId, 3, 'the recovery to SLO-0');
    const stored = await new RunEventRepository(db).listByRun(runId, { kind: 'tier' });
    expect(changesOf(runId)).toEqual(['null -> SLO-0', 'SLO-0 -> SLO-1', 'SLO-1 -> SLO-0']);
    expect(stored.map((e) => e.eventId)).toEqual(announced.filter((e) => e.runId === runId).map((e) => e.id));
    // The recovery names the objective that took the run into SLO-1 before the second restart.
    expect(announced.find((e) => e.runId === runId && e.to === 'SLO-0' && e.from)?.objective).toBe(
      'correctedE2e p99',
    );
  });

  it('publishes a tier change the previous analyzer stored but did not publish, with its own id, once', async () => {
    const { campaignId, runId, send } = await run();
    await send(3, 100);
    await waitForChanges(runId, 1, 'the first tier assigned');
    await analyzer?.close();
    // What an analyzer killed between storing a change and publishing it leaves behind.
    const unpublished: SloTierChange = {
      ...envelope(campaignId, runId, Date.now()),
      from: 'SLO-0',
      to: 'SLO-1',
      reason: 'SLO-0 missed: correctedE2e p99 1000.0 ms > 800 ms',
      figures: { value: 1000, threshold: 800 },
      objective: 'correctedE2e p99',
    };
    await new RunEventRepository(db).appendMany([
      {
        eventId: unpublished.id,
        runId,
        topic: Topics.sloTier.name,
        kind: 'tier',
        occurredAt: unpublished.emittedAt,
        payload: unpublished,
      },
    ]);

    await startAnalyzer();
    await send(2, 1_000);
    await waitForChanges(runId, 2, 'the stored change published');
    await restartAnalyzer();
    await send(2, 1_000);

    expect(announced.filter((e) => e.runId === runId).map((e) => e.id)).toEqual([
      announced.find((e) => e.runId === runId)!.id,
      unpublished.id,
    ]);
  });
});
