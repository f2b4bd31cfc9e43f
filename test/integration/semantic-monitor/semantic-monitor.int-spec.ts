import { Detectors, TOKEN_SAMPLE_LIMITS } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import {
  Topics,
  type DetectorSignal,
  type GpuTelemetry,
  perRecordSignals,
  type RecordSemanticSignal,
  type TokenStatsSignal,
} from '@fathom/contracts';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

/**
 * The semantic-monitor inside the embedded runtime, against the simulated target with every
 * response carrying a planted hallucinated span: risk segments come out as detector signals with
 * the request id and positions, every response gets an assessment, and the run gets its
 * semantic goodput beside goodput. The gpu-collector's derived hit-rate variance rides along.
 */
describe('semantic-monitor in a run', () => {
  jest.setTimeout(90_000);
  let sim: SimTarget;
  let sut: EmbeddedFathom;
  const signals: RecordSemanticSignal[] = [];
  const gpu: GpuTelemetry[] = [];

  beforeAll(async () => {
    process.env.FATHOM_SEMANTIC_EMBEDDER = 'off';
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } });
    sut = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    await sut.bus.subscribe(
      Topics.semanticSignal,
      { group: 'test-semantic' },
      (s) => void signals.push(...perRecordSignals(s)),
    );
    await sut.bus.subscribe(Topics.gpuTelemetry, { group: 'test-gpu' }, (g) => void gpu.push(g));
  });
  /** Waits for the run and for the monitor's last word on it (its semantic-goodput signal). */
  async function signalsOfFinishedRun(runId: string): Promise<() => RecordSemanticSignal[]> {
    await waitForRun(sut.runs, runId, { timeoutMs: 60_000 });
    const ofRun = () => signals.filter((s) => s.runId === runId);
    const deadline = Date.now() + 15_000;
    while (
      !ofRun().some((s) => s.kind === 'detector' && s.detector === Detectors.semanticGoodput) &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 100));
    }
    return ofRun;
  }

  afterAll(async () => {
    await sut?.close();
    await sim?.close();
    delete process.env.FATHOM_SEMANTIC_EMBEDDER;
  });

  it('publishes hallucination-risk signals, assessments and semantic goodput', async () => {
    sim.faults.set({ kind: 'hallucination_rate', rate: 1 });
    const { runId } = await sut.campaigns.submit(
      {
        name: 'semantic monitor',
        target: { baseUrl: `${sim.url}/v1`, metricsUrls: [`${sim.url}/metrics`] },
        scenario: {
          type: 'chat',
          model: 'fathom-sim-8b',
          prompts: ['Explain KV caching.', 'Name three rivers.'],
          maxTokens: 48,
          logprobs: true,
          topLogprobs: 5,
        },
        load: { concurrency: 4, durationMs: 1500 },
        slo: { p99Ms: 60_000 },
        reruns: { maxReruns: 0, cooldownMs: 0 },
      } as never,
      'api',
    );
    const ofRun = await signalsOfFinishedRun(runId);
    const stats = ofRun().filter((s): s is TokenStatsSignal => s.kind === 'token-stats');
    const detectors = ofRun().filter((s): s is DetectorSignal => s.kind === 'detector');
    const risks = detectors.filter((d) => d.detector === Detectors.hallucinationRisk);
    expect(stats.length).toBeGreaterThan(4);
    expect(stats.every((s) => s.assessment === 'ok' && s.latencySloMet === true)).toBe(true);
    // Each carries its request's end, where the report places it: after the signal's batch began.
    expect(stats.every((s) => s.endedAt !== undefined && s.endedAt <= s.emittedAt)).toBe(true);
    // Rate 1 plants a span in every response of 12 tokens or more.
    expect(risks.length).toBeGreaterThanOrEqual(stats.length * 0.9);
    expect(risks[0].requestId).not.toBeNull();
    expect(risks[0].figures).toEqual(
      expect.objectContaining({
        start: expect.any(Number),
        end: expect.any(Number),
        meanEntropyBits: expect.any(Number),
      }),
    );
    // The heat map's sample: the first risky responses keep their token rows, with their spans.
    const sampled = stats.filter((s) => s.tokenSample);
    const risky = (list: TokenStatsSignal[]) => list.filter((s) => (s.riskSegments ?? 0) > 0).length;
    expect(risky(sampled)).toBe(Math.min(risky(stats), TOKEN_SAMPLE_LIMITS.riskyPerRun));
    expect(sampled.length - risky(sampled)).toBeLessThanOrEqual(TOKEN_SAMPLE_LIMITS.plainPerRun);
    for (const s of sampled) {
      expect(s.tokenSample!.rows.length).toBe(Math.min(s.outputTokens, TOKEN_SAMPLE_LIMITS.maxTokens));
      expect(s.tokenSample!.spans.length).toBe(s.riskSegments);
    }
    const goodput = detectors.find((d) => d.detector === Detectors.semanticGoodput);
    expect(goodput?.figures).toMatchObject({ complete: 1, goodput: 1, requests: stats.length });
    expect(goodput!.figures.semanticGoodput).toBeLessThan(0.2);
    expect(
      gpu.some((g) => g.runId === runId && g.samples.some((s) => s.metric === 'kv_cache_usage_ratio')),
    ).toBe(true);
  });

  it('flags planted prompt explosions (nesting amplified past depth 5) and nothing on clean prompts', async () => {
    sim.faults.clear('hallucination_rate');
    const run = async (perturbation: Record<string, unknown> | null) => {
      const { runId } = await sut.campaigns.submit(
        {
          name: perturbation ? 'exploded prompts' : 'clean prompts',
          target: { baseUrl: `${sim.url}/v1` },
          scenario: {
            type: 'chat',
            prompts: ['Explain KV caching.', 'Name three rivers.'],
            maxTokens: 8,
            ...(perturbation ? { perturbation } : {}),
          },
          load: { concurrency: 2, durationMs: 1000 },
          reruns: { maxReruns: 0, cooldownMs: 0 },
        } as never,
        'api',
      );
      const ofRun = await signalsOfFinishedRun(runId);
      const stats = ofRun().filter((s) => s.kind === 'token-stats');
      const explosions = ofRun().filter(
        (s): s is DetectorSignal => s.kind === 'detector' && s.detector === Detectors.promptExplosion,
      );
      return { stats, explosions };
    };

    // Strength 1 wraps every prompt in 8 levels of brackets (libs/load perturbation).
    const exploded = await run({ kind: 'nesting-amplification', strength: 1, seed: 7 });
    expect(exploded.stats.length).toBeGreaterThan(0);
    expect(exploded.explosions).toHaveLength(exploded.stats.length);
    expect(exploded.explosions[0].figures).toMatchObject({ depthExceeded: 1 });
    expect(exploded.explosions[0].figures.depth).toBeGreaterThan(5);

    const clean = await run(null);
    expect(clean.stats.length).toBeGreaterThan(0);
    expect(clean.explosions).toEqual([]);
  });
});
