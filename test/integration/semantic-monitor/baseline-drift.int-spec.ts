/**
 * @jest-environment ./libs/semantic/src/testing/ort.jest-environment.js
 */
import { Detectors } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { Topics, type DetectorSignal, type SemanticSignal } from '@fathom/contracts';
import { RESPONSE_BASELINE_NAME } from '@fathom/semantic';
import { BaselineRepository } from '@fathom/storage';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

/**
 * Drift and intent accuracy against a stored baseline run, end to end: the semantic-monitor in
 * the embedded runtime embeds a sample of each run's responses with the default embedder (USE
 * lite), run A is recorded as the campaign's baseline, run B of the same campaign against the
 * same simulated target shows no drift and no accuracy drop, and run C, a campaign pinned to run
 * A whose target is the simulator with another seed (a swapped model: every response changes),
 * is flagged and not recorded.
 */
describe('semantic-monitor against a baseline run', () => {
  jest.setTimeout(120_000);
  let sim: SimTarget;
  let swapped: SimTarget;
  let sut: EmbeddedFathom;
  const signals: SemanticSignal[] = [];
  const prompts = [
    'How do I reset my password?',
    'Explain KV caching.',
    'Name three rivers.',
    'What is the refund policy?',
    'Summarise the quarterly report.',
    'Translate hello to French.',
  ];
  const campaign = (baseUrl: string, baseline: Record<string, unknown>) => ({
    name: 'baseline drift',
    target: { baseUrl: `${baseUrl}/v1` },
    scenario: { type: 'chat', model: 'fathom-sim-8b', prompts, maxTokens: 32 },
    load: { concurrency: 4, durationMs: 2000 },
    slo: { p99Ms: 60_000 },
    reruns: { maxReruns: 0, cooldownMs: 0 },
    semantic: { baseline },
  });

  beforeAll(async () => {
    delete process.env.FATHOM_SEMANTIC_EMBEDDER; // the default: USE lite, offline
    // All of jest, the simulators and five services share 2 cores: the adaptive rate would sit at
    // its 1 % floor, a handful of responses per run. 30 % gives each run its minPairs.
    process.env.FATHOM_SEMANTIC_MIN_SAMPLE_RATE = '0.3';
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05, seed: 42 } });
    swapped = await startSimTarget({ port: 0, config: { timeScale: 0.05, seed: 43 } });
    sut = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    await sut.bus.subscribe(Topics.semanticSignal, { group: 'test-baseline' }, (s) => void signals.push(s));
  });

  afterAll(async () => {
    await sut?.close();
    await sim?.close();
    await swapped?.close();
    delete process.env.FATHOM_SEMANTIC_MIN_SAMPLE_RATE;
  });

  const detectors = (runId: string, detector: string) =>
    signals.filter(
      (s): s is DetectorSignal => s.kind === 'detector' && s.runId === runId && s.detector === detector,
    );
  const byId = (id: string) => signals.find((s): s is DetectorSignal => s.kind === 'detector' && s.id === id);

  /** Waits for the run and for the baseline watch's last word (its record decision). */
  async function finished(runId: string): Promise<void> {
    await waitForRun(sut.runs, runId, { timeoutMs: 60_000 });
    const deadline = Date.now() + 20_000;
    while (!byId(`${runId}/${Detectors.baselineDrift}/record`) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
  }

  it('records run A, finds no drift in run B of the same campaign, flags run C against a swapped model', async () => {
    const a = await sut.campaigns.submit(campaign(sim.url, {}), 'api');
    await finished(a.runId);
    expect(byId(`${a.runId}/baseline-drift/load`)?.message).toMatch(/no baseline yet/);
    expect(byId(`${a.runId}/baseline-drift/record`)?.message).toMatch(/recorded as a baseline/);
    const stored = await new BaselineRepository(sut.database).forRun(a.runId, RESPONSE_BASELINE_NAME);
    expect(stored?.campaignId).toBe(a.campaignId);

    const b = await sut.campaigns.startStored(a.campaignId, 'api', null);
    await finished(b!.runId);
    const driftB = byId(`${b!.runId}/baseline-drift/final`);
    const intentB = byId(`${b!.runId}/intent-accuracy/final`);
    expect(driftB?.figures.pairs).toBeGreaterThanOrEqual(5);
    // Same seed, same prompts: the simulator answers word for word as in run A.
    expect(driftB?.figures.drifted).toBe(0);
    expect(driftB?.figures.meanCosine).toBeGreaterThan(0.99);
    expect(driftB?.severity).toBe('info');
    expect(intentB?.figures.classified).toBeGreaterThanOrEqual(5);
    expect(intentB?.figures.intentAccuracyDrop).toBeLessThan(0.05);
    expect(intentB?.severity).toBe('info');

    const c = await sut.campaigns.submit(campaign(swapped.url, { compareWith: { runId: a.runId } }), 'api');
    await finished(c.runId);
    const driftC = byId(`${c.runId}/baseline-drift/final`);
    const intentC = byId(`${c.runId}/intent-accuracy/final`);
    expect(driftC?.figures.pairs).toBeGreaterThanOrEqual(5);
    expect(driftC?.severity).toBe('warning');
    expect(driftC?.figures.driftedShare).toBeGreaterThanOrEqual(0.05);
    expect(intentC?.figures.intentAccuracyDrop).toBeGreaterThanOrEqual(0.05);
    expect(intentC?.severity).toBe('critical');
    expect(byId(`${c.runId}/baseline-drift/record`)?.message).toMatch(/not recorded.*drifted/);
    // Run B, healthy, became the campaign's newest baseline; run C did not.
    expect(byId(`${b!.runId}/baseline-drift/record`)?.message).toMatch(/recorded as a baseline/);
    // Progress signals went out while C ran, each with the figure the analyzer reads.
    expect(detectors(c.runId, Detectors.intentAccuracy).length).toBeGreaterThanOrEqual(2);
  });
});
