import { randomUUID } from 'node:crypto';
import { createBus, type Bus } from '@fathom/bus';
import { createRepositories, openDatabase, type Database } from '@fathom/storage';
import {
  CampaignSpecSchema,
  Topics,
  envelope,
  type RunLifecycle,
  type RunReport,
  type TelemetryWindow,
} from '@fathom/contracts';
import { encodeHistogram, decodeHistogram, mergeWindows } from '@fathom/load';
import { waitFor } from '@fathom/testing';
import { createFathomApp, type FathomApp } from '@fathom/runtime';

/**
 * A load-generator killed mid-run: its shard started, published windows, and never ended. The
 * analyzer reports the run `partial` once it has been silent FATHOM_ANALYZER_SHARD_SILENCE_MS,
 * with every request the stored windows hold and the missing shard named, instead of leaving it
 * without a summary for the orchestrator to fail. Analyzer only, in-memory bus and PGlite; the
 * test plays the generators.
 */
describe('a generator that dies mid-run', () => {
  jest.setTimeout(60_000);
  let bus: Bus;
  let db: Database;
  let analyzer: FathomApp;
  const reports: RunReport[] = [];

  beforeAll(async () => {
    bus = createBus({ kind: 'memory' });
    db = await openDatabase({ kind: 'pglite', dataDir: null });
    await bus.subscribe(Topics.runReport, { group: `test-reports-${randomUUID()}` }, async (e) => {
      reports.push(e);
    });
    analyzer = await createFathomApp({
      services: ['analyzer'],
      bus,
      database: db,
      logLevels: false,
      env: { FATHOM_ANALYZER_SHARD_SILENCE_MS: '1500', FATHOM_ANALYZER_SETTLE_MS: '1000' },
    });
  });

  afterAll(async () => {
    await analyzer?.close();
    await bus?.close();
    await db?.close();
  });

  it('reports the run partial with what the stored windows measured and the shard that went silent', async () => {
    const spec = CampaignSpecSchema.parse({
      name: 'lost generator',
      target: { baseUrl: 'http://127.0.0.1:9/v1' },
      scenario: { type: 'chat', prompts: ['hello'] },
      load: { concurrency: 2, durationMs: 5_000 },
    });
    const repos = createRepositories(db);
    const campaign = await repos.campaigns.create({ name: spec.name, spec });
    const { id: runId } = await repos.runs.create({ campaignId: campaign.id, trigger: 'api' });
    const campaignId = campaign.id;
    const shardOf = (index: number) => ({ index, count: 2 });
    const h = decodeHistogram(mergeWindows([]).histogramsUs.e2e);
    h.recordValueWithCount(50_000, 10);
    const e2e = encodeHistogram(h);
    const window = (shard: number, seq: number): TelemetryWindow => ({
      ...envelope(campaignId, runId),
      generatorId: `lg-${shard}`,
      shard,
      windowStart: Date.now() - 1000,
      windowMs: 1000,
      seq,
      requests: 10,
      errors: 0,
      errorClasses: {},
      dropped: 0,
      late: 0,
      inputTokens: 10,
      outputTokens: 10,
      histogramsUs: { e2e, correctedE2e: e2e, ttft: e2e, itl: e2e },
    });
    const lifecycle = (shard: number, phase: RunLifecycle['phase'], sent = 0): RunLifecycle => ({
      ...envelope(campaignId, runId),
      phase,
      shard: shardOf(shard),
      generatorId: `lg-${shard}`,
      counts: {
        sent,
        completed: sent,
        errors: 0,
        dropped: 0,
        recordsPublished: 0,
        windowsPublished: sent / 10,
      },
    });
    for (const index of [0, 1])
      await bus.publish(Topics.runShard, {
        ...envelope(campaignId, runId),
        kind: 'start-shard',
        shard: shardOf(index),
        spec,
        trigger: 'api',
      });
    await bus.publish(Topics.runLifecycle, lifecycle(0, 'shard-started'));
    await bus.publish(Topics.runLifecycle, lifecycle(1, 'shard-started'));
    for (let seq = 0; seq < 4; seq++) {
      await bus.publish(Topics.telemetryWindow, window(0, seq));
      if (seq < 3) await bus.publish(Topics.telemetryWindow, window(1, seq)); // lg-1 dies after 3
    }
    await bus.publish(Topics.runLifecycle, lifecycle(0, 'shard-finished', 40));

    await waitFor(() => reports.find((r) => r.runId === runId), { timeoutMs: 30_000 });
    const report = reports.find((r) => r.runId === runId)!;

    expect(report.summary).toMatchObject({ status: 'partial', requests: 70 });
    expect(report.summary.reason).toMatch(/shard 1 of 2 \(generator lg-1\) stopped reporting/);
    expect(report.summary.telemetry).toMatchObject({
      requestsCounted: 40,
      requestsMissing: 0,
      shardsMissing: [{ index: 1, generatorId: 'lg-1' }],
    });
    expect(report.validity?.valid).toBe(false);
    expect(report.validity?.reasons.map((r) => r.kind)).toContain('telemetry-lost');
    expect(await repos.runReports.latest(runId)).not.toBeNull();
  });
});
