import { startSimTarget, type SimTarget } from '@fathom/sim';
import { Topics, type RootCauseChange } from '@fathom/contracts';
import type { RunReportDocument } from '@fathom/analysis';
import { RunReportRepository } from '@fathom/storage';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

/**
 * Tool schema drift acted on by the analyzer: campaigns pin the simulated target's own tool
 * contracts (weather v1.9, orders v2.1), the sim's `schema_drift` fault (type_change, weather
 * only) is planted 4 s into a 10 s run, and the semantic-monitor's `schema-drift` signal must
 * make `tool-schema-drift` the live top cause within 10 s, naming weather v1.9 and $.temp_c
 * (orders did not drift); the report lists the finding. A clean run beside it names no drift.
 */
const RUN_MS = 10_000;
const ONSET_AFTER_MS = 4_000;

describe('analyzer: tool schema drift signals as a root cause', () => {
  jest.setTimeout(90_000);
  let sut: EmbeddedFathom;
  const sims: SimTarget[] = [];
  const causeEvents: RootCauseChange[] = [];
  const docs: Record<string, Record<string, unknown>> = {};
  let drifted: Promise<{ runId: string; onsetAt: number; document: RunReportDocument }>;
  let clean: Promise<{ runId: string; document: RunReportDocument }>;

  beforeAll(async () => {
    process.env.FATHOM_SEMANTIC_EMBEDDER = 'off';
    process.env.FATHOM_ANALYZER_SETTLE_MS = '3000';
    // A quarter of real time, as the other root-cause runs.
    const driftSim = await startSimTarget({ port: 0, config: { timeScale: 0.25 } });
    const cleanSim = await startSimTarget({ port: 0, config: { timeScale: 0.25 } });
    sims.push(driftSim, cleanSim);
    // The contracts are the sim's own OpenAPI documents, pinned before any fault.
    for (const [tool, version] of [
      ['weather', 'v1.9'],
      ['orders', 'v2.1'],
    ])
      docs[`${tool}@${version}`] = (await (
        await fetch(`${driftSim.url}/tools/${tool}/${version}/openapi.json`)
      ).json()) as Record<string, unknown>;
    sut = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    await sut.bus.subscribe(
      Topics.rootCause,
      { group: 'test-drift-causes' },
      async (e) => void causeEvents.push(e),
    );
    const reports = sut.fathom.app.get(RunReportRepository);

    async function run(name: string, sim: SimTarget, durationMs: number, plantAfterMs: number | null) {
      const { runId } = await sut.campaigns.submit(
        {
          name,
          target: { baseUrl: sim.url },
          scenario: {
            type: 'http',
            steps: [
              {
                name: 'weather',
                method: 'POST',
                path: '/tools/weather/invoke',
                body: { city: 'Oslo' },
                contract: { responses: { 'v1.9': docs['weather@v1.9'] } },
              },
              {
                name: 'orders',
                method: 'POST',
                path: '/tools/orders/invoke',
                headers: { 'x-gray-flag': 'v2' },
                body: { order_id: 'o-17' },
                contract: { responses: { 'v2.1': docs['orders@v2.1'] } },
              },
            ],
          },
          load: { concurrency: 2, durationMs },
          reruns: { maxReruns: 0, cooldownMs: 0 },
        } as never,
        'api',
      );
      let onsetAt = Number.NaN;
      if (plantAfterMs !== null) {
        for (;;) {
          const r = await sut.runs.get(runId);
          if (r && r.status !== 'pending') break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await new Promise((resolve) => setTimeout(resolve, plantAfterMs));
        sim.faults.set({ kind: 'schema_drift', mode: 'type_change', tool: 'weather' });
        onsetAt = Date.now();
      }
      await waitForRun(sut.runs, runId, { timeoutMs: 60_000 });
      const stored = await reports.latest(runId);
      if (!stored) throw new Error(`no report for ${name}`);
      return { runId, onsetAt, document: stored.document as unknown as RunReportDocument };
    }

    drifted = run('drift: weather type change', driftSim, RUN_MS, ONSET_AFTER_MS);
    clean = run('drift: clean tools', cleanSim, 5_000, null);
    drifted.catch(() => undefined);
    clean.catch(() => undefined);
  });

  afterAll(async () => {
    await sut?.close();
    await Promise.all(sims.map((s) => s.close()));
    delete process.env.FATHOM_SEMANTIC_EMBEDDER;
    delete process.env.FATHOM_ANALYZER_SETTLE_MS;
  });

  it('names tool-schema-drift top within 10 s of a planted type change, with the tool, version and path', async () => {
    const { runId, onsetAt, document } = await drifted;
    const events = causeEvents.filter((e) => e.runId === runId).sort((a, b) => a.emittedAt - b.emittedAt);
    const firstTop = events.find((e) => e.top === 'tool-schema-drift');
    const detail = JSON.stringify(
      events.map((e) => [e.emittedAt - onsetAt, e.top, e.causes.map((c) => `${c.kind}:${c.confidence}`)]),
    );
    expect({ top: firstTop?.top ?? null, detail }).toEqual({ top: 'tool-schema-drift', detail });
    // Nothing was named before the drift existed.
    expect(events[0].emittedAt).toBeGreaterThanOrEqual(onsetAt);
    const latencyMs = firstTop!.emittedAt - onsetAt;
    console.log(`schema drift (type_change): tool-schema-drift named ${latencyMs} ms after onset`);
    expect(latencyMs).toBeLessThanOrEqual(10_000);

    const cause = firstTop!.causes[0];
    expect(cause.title).toContain('weather v1.9 ($.temp_c type-changed)');
    expect(cause.evidence).toContain(
      'weather v1.9 $.temp_c type-changed: declared "number", observed string',
    );
    // orders v2.1 kept its contract: it is not named.
    expect(cause.evidence.join('\n')).not.toContain('orders');
    expect(cause.figures['tool.weather@v1.9.brokenCalls']).toBeGreaterThan(0);

    // Once the recent span holds only drifted answers, every one breaks: the strongest verdict.
    const reported = document.rootCauses[0];
    expect(reported.kind).toBe('tool-schema-drift');
    expect(reported.figures['tool.weather@v1.9.contractPassRate']).toBeLessThanOrEqual(0.1);
    expect(reported.confidence).toBeGreaterThanOrEqual(0.96);
    const findings = document.semantic.toolContracts.drift;
    expect(findings.map((f) => f.text)).toEqual([
      'weather v1.9 $.temp_c type-changed: declared "number", observed string',
    ]);
    const rates = new Map(
      document.semantic.toolContracts.rates.map((r) => [`${r.tool}@${r.version}`, r.contractPassRate]),
    );
    // Answers before the onset kept the contract, those after broke it.
    expect(rates.get('weather@v1.9')).toBeGreaterThan(0);
    expect(rates.get('weather@v1.9')).toBeLessThan(1);
    expect(rates.get('orders@v2.1')).toBe(1);
  });

  it('names no drift on a clean run with the same pinned contracts', async () => {
    const { runId, document } = await clean;
    const named = causeEvents.filter((e) => e.runId === runId).flatMap((e) => e.causes.map((c) => c.kind));
    expect(named).not.toContain('tool-schema-drift');
    expect(document.rootCauses.map((c) => c.kind)).not.toContain('tool-schema-drift');
    expect(document.semantic.toolContracts.drift).toEqual([]);
    expect(document.semantic.toolContracts.rates.map((r) => [r.tool, r.version, r.contractPassRate])).toEqual(
      [
        ['orders', 'v2.1', 1],
        ['weather', 'v1.9', 1],
      ],
    );
    expect(document.summary.requests).toBeGreaterThan(10);
  });
});
