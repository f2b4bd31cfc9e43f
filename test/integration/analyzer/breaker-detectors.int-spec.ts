import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBus, type Bus } from '@fathom/bus';
import { RunEventRepository, openDatabase, type Database } from '@fathom/storage';
import {
  CampaignSpecSchema,
  Detectors,
  Topics,
  envelope,
  shadowRunId,
  type BreakerChange,
  type CampaignSpecInput,
  type DetectorSignal,
  type RequestRecord,
  type SemanticSignal,
} from '@fathom/contracts';
import { waitFor } from '@fathom/testing';
import { createFathomApp, type FathomApp } from '@fathom/runtime';

/**
 * Every breaker the analyzer opens on a detector is fed by the service that sees the fact, and
 * closes again: the analyzer, semantic-monitor and gpu-collector on the in-memory bus; the test
 * publishes each run's plan and request records (as a load-generator would) and, for DRAM, serves
 * a DCGM endpoint whose DRAM_ACTIVE it turns up and down. Each breaker must open with its
 * detector named in the reason, go half-open after the breaker's 5 s (event time) and close on
 * three good probe calls.
 */
describe('breakers opened by detectors', () => {
  jest.setTimeout(60_000);
  let bus: Bus;
  let db: Database;
  let app: FathomApp;
  let dcgm: Server;
  let dramActive = 0.3;
  const breakers: BreakerChange[] = [];
  const detectors: DetectorSignal[] = [];
  const saved = process.env.FATHOM_GPU_SCRAPE_MS;

  beforeAll(async () => {
    process.env.FATHOM_GPU_SCRAPE_MS = '100';
    dcgm = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(
        '# HELP DCGM_FI_PROF_DRAM_ACTIVE Ratio of cycles the device memory interface is active.\n' +
          '# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge\n' +
          `DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-1",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="h"} ${dramActive}\n`,
      );
    });
    await new Promise<void>((resolve) => dcgm.listen(0, '127.0.0.1', resolve));
    bus = createBus({ kind: 'memory' });
    db = await openDatabase({ kind: 'pglite', dataDir: null });
    await bus.subscribe(Topics.breaker, { group: `test-breakers-${randomUUID()}` }, async (e) => {
      breakers.push(e);
    });
    await bus.subscribe(
      Topics.semanticSignal,
      { group: `test-signals-${randomUUID()}` },
      async (e: SemanticSignal) => {
        if (e.kind === 'detector') detectors.push(e);
      },
    );
    app = await createFathomApp({
      services: ['analyzer', 'semantic-monitor', 'gpu-collector'],
      bus,
      database: db,
      logLevels: false,
    });
  });

  afterAll(async () => {
    await app?.close();
    await bus?.close();
    await db?.close();
    await new Promise((resolve) => dcgm?.close(resolve));
    if (saved === undefined) delete process.env.FATHOM_GPU_SCRAPE_MS;
    else process.env.FATHOM_GPU_SCRAPE_MS = saved;
  });

  const record = (startedAt: number, extra: Partial<RequestRecord> = {}): RequestRecord => ({
    requestId: randomUUID(),
    shard: 0,
    scheduledAt: startedAt,
    startedAt,
    ttftMs: 10,
    e2eMs: 40,
    correctedE2eMs: 40,
    chunkOffsetsMs: [10, 20, 30],
    status: 200,
    errorClass: null,
    inputTokensClient: 4,
    outputTokensClient: 3,
    usage: null,
    content: 'Paris is the capital of France.',
    finishReason: 'stop',
    ...extra,
  });

  /** Plans a run and returns a way to publish its records. */
  const plan = async (spec: Partial<CampaignSpecInput>) => {
    const campaignId = randomUUID();
    const runId = randomUUID();
    await bus.publish(Topics.runShard, {
      ...envelope(campaignId, runId),
      kind: 'start-shard',
      shard: { index: 0, count: 1 },
      spec: CampaignSpecSchema.parse({
        name: 'breaker detectors',
        target: { baseUrl: 'http://127.0.0.1:9/v1' },
        scenario: { type: 'chat', prompts: ['hello'] },
        load: { concurrency: 1, durationMs: 600_000 },
        ...spec,
      }),
      trigger: 'api',
    });
    const send = (records: RequestRecord[]) =>
      bus.publish(Topics.requestTelemetry, { ...envelope(campaignId, runId), generatorId: 'g', records });
    return { runId, send };
  };

  const transitionsOf = (runId: string) =>
    breakers.filter((b) => b.runId === runId).map((b) => `${b.breaker.layer}:${b.from}->${b.to}`);

  /** Waits for the open, then sends probe calls 6 s (event time) later and waits for the close. */
  async function openAndClose(
    runId: string,
    layer: string,
    detector: string,
    probes: (at: number) => Promise<void>,
  ): Promise<BreakerChange> {
    const opened = await waitFor(() => breakers.find((b) => b.runId === runId && b.to === 'open'), {
      timeoutMs: 20_000,
      description: `the ${layer} breaker to open on ${detector}`,
    });
    expect(opened.breaker.layer).toBe(layer);
    expect(opened.reason.startsWith(`${detector}: `)).toBe(true);
    await probes(opened.emittedAt + 6_000);
    await waitFor(() => breakers.find((b) => b.runId === runId && b.to === 'closed'), {
      timeoutMs: 20_000,
      description: `the ${layer} breaker to close: ${JSON.stringify(transitionsOf(runId))}`,
    });
    expect(transitionsOf(runId)).toEqual([
      `${layer}:closed->open`,
      `${layer}:open->half-open`,
      `${layer}:half-open->closed`,
    ]);
    return opened;
  }

  const okProbes =
    (send: (r: RequestRecord[]) => Promise<void>, extra: Partial<RequestRecord> = {}) =>
    (at: number) =>
      send([0, 1, 2].map((i) => record(at + 100 * i, extra)));

  it('prompt-explosion (semantic-monitor) opens the LLM breaker, and it closes again', async () => {
    const { runId, send } = await plan({});
    const t0 = Date.now();
    await send([record(t0, { prompt: 'answer ((([[[{{{ the nested question }}}]]]))) now' })]);
    const opened = await openAndClose(runId, 'llm', Detectors.promptExplosion, okProbes(send));
    expect(opened.reason).toMatch(/depth 8 /);
  });

  it('reranker-busy (semantic-monitor) opens the rerank breaker, and it closes again', async () => {
    const { runId, send } = await plan({
      target: { baseUrl: 'http://127.0.0.1:9' },
      scenario: { type: 'http', steps: [{ name: 'rerank', method: 'POST', path: '/rag/rerank', body: {} }] },
    });
    const t0 = Date.now();
    // 3 of 10 refused: under the failure-rate breaker's 50 %, over the detector's 20 %.
    await send(
      Array.from({ length: 10 }, (_, i) =>
        record(
          t0 + 100 * i,
          i % 3 === 1
            ? {
                status: 503,
                errorClass: 'http-5xx',
                errorMessage: 'step rerank: HTTP 503: {"error":"reranker busy: 32/32 in use"}',
                content: '',
              }
            : {},
        ),
      ),
    );
    const opened = await openAndClose(runId, 'rerank', Detectors.rerankerBusy, okProbes(send));
    expect(opened.figures).toMatchObject({ inUse: 32, cap: 32 });
  });

  it('semantic-failure-rate (semantic-monitor) opens the LLM breaker, and it closes again', async () => {
    const { runId, send } = await plan({});
    const t0 = Date.now();
    // 20 good answers (the run's own baseline), then empty 200 answers: the non-empty check fails.
    // One batch, so the monitor judges them in this order.
    await send(
      Array.from({ length: 40 }, (_, i) =>
        record(t0 + 100 * i, i < 20 ? {} : { content: '', outputTokensClient: 0, chunkOffsetsMs: [] }),
      ),
    );
    const opened = await openAndClose(runId, 'llm', Detectors.semanticFailureRate, okProbes(send));
    expect(opened.figures).toMatchObject({ baselineShare: 0 });
    expect(opened.figures!.share).toBeGreaterThanOrEqual(0.3);
  });

  it('dram-saturation (gpu-collector) opens the LLM breaker, and it closes again', async () => {
    dramActive = 0.95;
    const { runId, send } = await plan({
      target: {
        baseUrl: 'http://127.0.0.1:9/v1',
        metricsUrls: [`http://127.0.0.1:${(dcgm.address() as AddressInfo).port}/metrics`],
      },
    });
    await openAndClose(runId, 'llm', Detectors.dramSaturation, async (at) => {
      dramActive = 0.3;
      await okProbes(send)(at);
    });
    const published = detectors.filter((d) => d.runId === runId && d.detector === Detectors.dramSaturation);
    expect(published[0]).toMatchObject({
      severity: 'warning',
      figures: { peak: 0.95, threshold: 0.8, scrapes: 3 },
    });
    await waitFor(
      () =>
        detectors.some(
          (d) => d.runId === runId && d.detector === Detectors.dramSaturation && d.severity === 'info',
        ),
      {
        description: 'the DRAM episode to clear',
      },
    );
  });
  it("shadow-regression (orchestrator) opens a shadow candidate's LLM breaker; a regressed probe reopens it, clean windows close it", async () => {
    const shadowId = randomUUID();
    const runId = shadowRunId(shadowId);
    const target = 'http://10.0.0.7:8000/v1';
    const window = (
      at: number,
      severity: DetectorSignal['severity'],
      labels: Record<string, string> = { target },
    ) =>
      bus.publish(Topics.semanticSignal, {
        ...envelope(shadowId, runId, at),
        kind: 'detector',
        detector: Detectors.shadowRegression,
        requestId: null,
        severity,
        message: severity === 'info' ? 'within the noise floor' : 'hallucinationRisk +0.2 (noise 0)',
        figures: { samples: 8 },
        labels: { ...labels, metrics: severity === 'info' ? '' : 'hallucinationRisk' },
      });
    const t0 = Date.now();
    // Without a candidate named: ignored. A first regressed window (not sustained yet): no breaker.
    await window(t0 - 1000, 'critical', {});
    await window(t0, 'warning');
    await window(t0 + 1000, 'critical');
    // Clean windows while it is open change nothing; after the 5 s a regressed window reopens it.
    await window(t0 + 2000, 'info');
    await window(t0 + 7000, 'warning');
    for (const dt of [13_000, 14_000, 15_000]) await window(t0 + dt, 'info');
    await waitFor(() => breakers.find((b) => b.runId === runId && b.to === 'closed'), {
      timeoutMs: 20_000,
      description: `the shadow candidate's breaker to close: ${JSON.stringify(transitionsOf(runId))}`,
    });
    expect(transitionsOf(runId)).toEqual([
      'llm:closed->open',
      'llm:open->half-open',
      'llm:half-open->open',
      'llm:open->half-open',
      'llm:half-open->closed',
    ]);
    const opened = breakers.find((b) => b.runId === runId)!;
    expect(opened).toMatchObject({
      campaignId: shadowId,
      emittedAt: t0 + 1000,
      breaker: { target, layer: 'llm', node: '10.0.0.7:8000' },
    });
    expect(opened.reason).toMatch(/^shadow-regression: hallucinationRisk/);
  });

  it("keeps a live shadow campaign's stored events bounded however long it runs", async () => {
    const shadowId = randomUUID();
    const runId = shadowRunId(shadowId);
    // A day of 60 s windows kept (1,440), older ones deleted once every 100 signals.
    const kept = 1440;
    const pruneEvery = 100;
    const windows = kept + pruneEvery + 50;
    const t0 = Date.now() - windows * 1000;
    const signals: DetectorSignal[] = Array.from({ length: windows }, (_, i) => ({
      ...envelope(shadowId, runId, t0 + i * 1000),
      kind: 'detector',
      detector: Detectors.shadowRegression,
      requestId: null,
      severity: 'info',
      message: 'shadow candidate within the noise floor over 8 samples',
      figures: { samples: 8 },
      labels: { target: 'http://10.0.0.9:8000/v1', metrics: '' },
    }));
    await bus.publishMany(Topics.semanticSignal, signals);
    const events = new RunEventRepository(db);
    const last = signals.at(-1)!.id;
    await waitFor(async () => (await events.listByRun(runId)).some((e) => e.eventId === last), {
      timeoutMs: 50_000,
      intervalMs: 500,
      description: 'the last window signal stored',
    });
    const stored = await events.listByRun(runId);
    // The last prune came with the 1,500th signal (back to the newest 1,440); 90 stored since.
    expect(stored).toHaveLength(kept + (windows % pruneEvery));
    expect(stored[0].eventId).toBe(signals[windows - stored.length].id);
  }, 60_000);
});
