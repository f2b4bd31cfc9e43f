import { Detectors } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { Topics, type DetectorSignal, type SemanticSignal } from '@fathom/contracts';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

/**
 * Tool schema drift end to end: campaigns pin the simulated target's tool contracts (its own
 * OpenAPI documents, fetched before any fault), the sim then serves drifted answers
 * (`schema_drift` fault, each mode), the load engine records the shape of every tool answer and
 * the semantic-monitor names the drifted path and the kind of change. A clean run raises nothing
 * and passes every contract.
 */
describe('tool schema drift through the semantic-monitor', () => {
  jest.setTimeout(120_000);
  let sim: SimTarget;
  let sut: EmbeddedFathom;
  const signals: SemanticSignal[] = [];
  const docs: Record<string, Record<string, unknown>> = {};

  beforeAll(async () => {
    process.env.FATHOM_SEMANTIC_EMBEDDER = 'off';
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } });
    for (const [tool, version] of [
      ['weather', 'v1.9'],
      ['weather', 'v2.1'],
      ['orders', 'v2.1'],
    ])
      docs[`${tool}@${version}`] = (await (
        await fetch(`${sim.url}/tools/${tool}/${version}/openapi.json`)
      ).json()) as Record<string, unknown>;
    sut = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    await sut.bus.subscribe(
      Topics.semanticSignal,
      { group: 'test-schema-drift' },
      (s) => void signals.push(s),
    );
  });

  afterAll(async () => {
    await sut?.close();
    await sim?.close();
    delete process.env.FATHOM_SEMANTIC_EMBEDDER;
  });

  /** weather answers as v1.9 (no gray flag), orders as v2.1 (`x-gray-flag: v2`), each with its pinned contract. */
  const httpScenario = () => ({
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
  });

  /** The weather tool called by the model, main path v2.1 with a fallback to v1.9. */
  const toolChainScenario = () => ({
    type: 'tool-chain',
    prompts: ['What is the weather in Oslo?'],
    tools: [
      {
        name: 'weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        invokePath: '/tools/weather/invoke',
        headers: { 'x-gray-flag': 'v2' },
        contract: { responses: { 'v2.1': docs['weather@v2.1'], 'v1.9': docs['weather@v1.9'] } },
        fallback: { headers: { 'x-tool-version': 'v1.9' } },
      },
    ],
  });

  /** HTTP steps' paths are appended to the base URL; a tool chain's model is under /v1. */
  async function run(name: string, scenario: { type: string }) {
    const { runId } = await sut.campaigns.submit(
      {
        name,
        target: { baseUrl: scenario.type === 'tool-chain' ? `${sim.url}/v1` : sim.url },
        scenario,
        load: { concurrency: 2, durationMs: 1000 },
        slo: { p99Ms: 60_000 },
        reruns: { maxReruns: 0, cooldownMs: 0 },
      } as never,
      'api',
    );
    await waitForRun(sut.runs, runId, { timeoutMs: 60_000 });
    const detectors = () =>
      signals.filter((s): s is DetectorSignal => s.runId === runId && s.kind === 'detector');
    const deadline = Date.now() + 15_000;
    while (!detectors().some((d) => d.detector === Detectors.semanticGoodput) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const summary = detectors().find((d) => d.detector === Detectors.semanticGoodput);
    expect(summary).toBeDefined();
    const drift = detectors()
      .filter((d) => d.detector === Detectors.schemaDrift)
      .map(
        (d) => `${d.labels?.tool} ${d.labels?.version} ${d.labels?.path} ${d.labels?.change} ${d.severity}`,
      )
      .sort();
    const other = detectors().filter((d) => d.detector === Detectors.toolContractUnusable);
    expect(other).toEqual([]);
    return { drift, figures: summary!.figures, requests: summary!.figures.requests };
  }

  it('passes every contract of a clean run and raises no drift', async () => {
    sim.faults.clear('schema_drift');
    const http = await run('clean tools', httpScenario());
    expect(http.requests).toBeGreaterThan(3);
    expect(http.drift).toEqual([]);
    expect(http.figures['tool.weather@v1.9.checked']).toBe(http.requests);
    expect(http.figures['tool.weather@v1.9.contractPassRate']).toBe(1);
    expect(http.figures['tool.orders@v2.1.contractPassRate']).toBe(1);
    expect(http.figures['tool.orders@v2.1.driftedPaths']).toBe(0);

    const chain = await run('clean tool chain', toolChainScenario());
    expect(chain.drift).toEqual([]);
    expect(chain.figures['tool.weather@v2.1.calls']).toBe(chain.requests);
    expect(chain.figures['tool.weather@v2.1.contractPassRate']).toBe(1);
    expect(chain.figures['tool.weather@v2.1.fallbackTriggerRate']).toBe(0);
    expect(chain.figures).not.toHaveProperty(['tool.weather@v1.9.calls']);
  });

  it.each([
    [
      'type_change',
      ['orders v2.1 $.total.amount type-changed critical', 'weather v1.9 $.temp_c type-changed critical'],
    ],
    [
      'required_added',
      ['orders v2.1 $.region required-added warning', 'weather v1.9 $.region required-added warning'],
    ],
    [
      'required_dropped',
      [
        'orders v2.1 $.status required-removed critical',
        'weather v1.9 $.conditions required-removed critical',
      ],
    ],
  ])(
    'names the path and kind of a planted %s drift, once per tool version and path',
    async (mode, expected) => {
      sim.faults.set({ kind: 'schema_drift', mode: mode as 'type_change' });
      try {
        const http = await run(`drift ${mode}`, httpScenario());
        expect(http.drift).toEqual(expected);
        // A new field breaks no reader of the old contract; a changed or dropped one breaks every answer.
        const passRate = mode === 'required_added' ? 1 : 0;
        expect(http.figures['tool.weather@v1.9.contractPassRate']).toBe(passRate);
        expect(http.figures['tool.orders@v2.1.contractPassRate']).toBe(passRate);
        expect(http.figures['tool.weather@v1.9.driftedPaths']).toBe(1);
      } finally {
        sim.faults.clear('schema_drift');
      }
    },
  );

  it('catches drift in a tool chain and falls back to v1.9 when the v2.1 answer breaks its contract', async () => {
    sim.faults.set({ kind: 'schema_drift', mode: 'type_change', tool: 'weather' });
    try {
      const chain = await run('drift in a tool chain', toolChainScenario());
      // The fault drifts both versions: the fallback's answers break their contract too.
      expect(chain.drift).toEqual([
        'weather v1.9 $.temp_c type-changed critical',
        'weather v2.1 $.temperature.value type-changed critical',
      ]);
      expect(chain.figures['tool.weather@v2.1.fallbackTriggerRate']).toBe(1);
      expect(chain.figures['tool.weather@v2.1.contractPassRate']).toBe(0);
      expect(chain.figures['tool.weather@v1.9.calls']).toBe(chain.figures['tool.weather@v2.1.calls']);
      expect(chain.figures['tool.weather@v1.9.fallbackTriggerRate']).toBe(0);
    } finally {
      sim.faults.clear('schema_drift');
    }
  });
});
