import { startSimTarget, type SimTarget } from '@fathom/sim';
import { probeHallucinationRisk } from '../testing/hallucination.probe';

/**
 * Hallucination-risk detection against the simulated target's planted spans. The bench
 * (bench/semantic-hallucination.bench.ts, 300 responses) measures span recall 1.000, token
 * recall 1.000, token precision 0.979-1.000 (top_logprobs 20 / 5); the floors sit just under,
 * so a regression in the entropy estimate or the segmenting fails here. The sim separates
 * grounded (<= 3.2 bits) from planted (>= 3.4 bits) tokens cleanly; a real model will not.
 */
describe('hallucination risk against planted spans', () => {
  let sim: SimTarget;

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.01 } });
  });
  afterAll(async () => sim?.close());

  it('finds the planted spans (span recall >= 0.98, token recall and precision >= 0.95)', async () => {
    sim.faults.set({ kind: 'hallucination_rate', rate: 1 });
    const sut = await probeHallucinationRisk({ baseUrl: sim.url, requests: 60 });
    sim.faults.clearAll();
    expect(sut.score.plantedSpans).toBeGreaterThanOrEqual(50);
    expect(sut.score.spanRecall).toBeGreaterThanOrEqual(0.98);
    expect(sut.score.tokenRecall).toBeGreaterThanOrEqual(0.95);
    expect(sut.score.tokenPrecision).toBeGreaterThanOrEqual(0.95);
  });

  it('raises no alarm on a clean run (hallucination_rate 0)', async () => {
    sim.faults.set({ kind: 'hallucination_rate', rate: 0 });
    const sut = await probeHallucinationRisk({ baseUrl: sim.url, requests: 60 });
    sim.faults.clearAll();
    expect(sut.score.plantedSpans).toBe(0);
    expect(sut.score.flaggedSegments).toBe(0);
  });
});
