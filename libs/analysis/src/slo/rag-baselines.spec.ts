import { CampaignSpecSchema, RAG_LAYER_BASELINES, effectiveSlo } from '@fathom/contracts';
import { sloObjectiveResults, sloVerdict } from './slo-verdict';
import { throughputFigures } from '../report/run-summary.builder';

const rag = (layer: 'index' | 'retrieve' | 'rerank', slo: Record<string, unknown>) =>
  CampaignSpecSchema.parse({
    name: 'rag',
    target: { baseUrl: 'http://127.0.0.1:1/v1' },
    scenario: { type: 'rag', layer, dataset: { type: 'inline', prompts: ['a'] }, batchSize: 1000 },
    load: { concurrency: 16, durationMs: 1000 },
    slo,
  });

const base = { requests: 100, errorRate: 0, p95Ms: 100, p99Ms: 150, ttftP99Ms: null };

describe('RAG layer baselines as campaign objectives', () => {
  it("adds the layer's spec baseline under ragBaselines; the campaign's own thresholds win", () => {
    const retrieve = rag('retrieve', { ragBaselines: true });
    expect(effectiveSlo(retrieve.slo, retrieve.scenario).p99Ms).toBe(145);
    const own = rag('retrieve', { ragBaselines: true, p99Ms: 200 });
    expect(effectiveSlo(own.slo, own.scenario).p99Ms).toBe(200);
    const off = rag('rerank', {});
    expect(effectiveSlo(off.slo, off.scenario)).toEqual(off.slo);
    const rerank = rag('rerank', { ragBaselines: true });
    expect(effectiveSlo(rerank.slo, rerank.scenario)).toMatchObject(RAG_LAYER_BASELINES.rerank);
  });

  it('fails retrieval at P99 150 ms against the 145 ms baseline', () => {
    const spec = rag('retrieve', { ragBaselines: true });
    expect(sloVerdict(base, effectiveSlo(spec.slo, spec.scenario)).failures).toEqual([
      'P99 150.0 ms > 145 ms',
    ]);
  });

  it('judges rerank throughput on successful requests per second, exclusive (> 38 QPS)', () => {
    const spec = rag('rerank', { ragBaselines: true });
    const slo = effectiveSlo(spec.slo, spec.scenario);
    // 400 requests in 10 s, 20 of them "reranker busy": 38 successful req/s is not above 38.
    const at38 = sloObjectiveResults(
      { ...base, requests: 400, errorRate: 0.05, ...throughputFigures(400, 20, 10, spec.scenario) },
      slo,
    ).find((r) => r.objective === 'minRequestsPerSec')!;
    expect(at38).toMatchObject({
      measured: 38,
      ok: false,
      text: 'throughput 38.0 successful req/s <= 38 req/s',
    });
    const above = sloObjectiveResults({ ...base, ...throughputFigures(400, 0, 10, spec.scenario) }, slo);
    expect(above.find((r) => r.objective === 'minRequestsPerSec')?.ok).toBe(true);
  });

  it('turns index upserts into seconds per million vectors (batchSize vectors each)', () => {
    const spec = rag('index', { ragBaselines: true });
    const slo = effectiveSlo(spec.slo, spec.scenario);
    // 100 upserts of 1000 vectors in 1 s: 100k vectors/s, 10 s per million: over 8.2 s.
    const slow = sloObjectiveResults({ ...base, ...throughputFigures(100, 0, 1, spec.scenario) }, slo).find(
      (r) => r.objective === 'maxSecondsPerMillionVectors',
    )!;
    expect(slow).toMatchObject({ measured: 10, ok: false });
    expect(slow.text).toBe('index 10.0 s per million vectors (100000 vectors/s) >= 8.2 s');
    const fast = sloObjectiveResults({ ...base, ...throughputFigures(200, 0, 1, spec.scenario) }, slo);
    expect(fast.find((r) => r.objective === 'maxSecondsPerMillionVectors')).toMatchObject({
      measured: 5,
      ok: true,
    });
  });

  it('leaves throughput objectives unjudged mid-run (no whole-run rate yet)', () => {
    const results = sloObjectiveResults(base, { minRequestsPerSec: 38, maxSecondsPerMillionVectors: 8.2 });
    expect(results.map((r) => r.objective)).toEqual(['requests']);
  });
});
