import { CampaignSpecSchema } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { runShard, type ShardResult } from '../engine/run-shard';
import { mergeWindows, type WindowSnapshot } from '../measure/window.snapshot';

const texts = { type: 'inline', prompts: ['invoice totals for march', 'refund policy', 'shipping to norway', 'gpu memory limits'] };

function run(sim: SimTarget, scenario: unknown, concurrency = 2, windows: WindowSnapshot[] = []): Promise<ShardResult> {
  return runShard({
    spec: CampaignSpecSchema.parse({ name: 'rag', target: { baseUrl: `${sim.url}/v1` }, scenario, load: { concurrency, durationMs: 400 } }),
    shard: { index: 0, count: 1 },
    runId: 'r',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: () => undefined, window: (w) => void windows.push(w) },
    signal: new AbortController().signal,
  });
}

describe('RAG layers in isolation against the simulated target', () => {
  let sim: SimTarget;
  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.1, rag: { initialIndexSize: 1000, rerankMaxConcurrency: 2 } } });
  });
  afterAll(() => sim.close());

  it('indexes batches through upsert and checks the count', async () => {
    const sut = await run(sim, { type: 'rag', layer: 'index', dataset: texts, batchSize: 8 });
    expect(sut.sent).toBeGreaterThan(2);
    expect(sut.errors).toBe(0);
    expect(sut.assertions['index.shape']).toEqual({ passed: sut.sent, failed: 0 });
  });

  it('retrieves top-k', async () => {
    const sut = await run(sim, { type: 'rag', layer: 'retrieve', dataset: texts, k: 20 });
    expect(sut.errors).toBe(0);
    expect(sut.assertions['retrieve.shape'].passed).toBe(sut.sent);
  });

  it('classifies the reranker refusing work over its semaphore as http-5xx', async () => {
    const windows: WindowSnapshot[] = [];
    const sut = await run(sim, { type: 'rag', layer: 'rerank', dataset: texts, batchSize: 4 }, 8, windows);
    expect(mergeWindows(windows).errorClasses).toEqual({ 'http-5xx': sut.errors });
    expect(sut.completed).toBeGreaterThan(0);
    expect(sut.errors).toBeGreaterThan(0); // 8 in flight against a cap of 2: "reranker busy"
    expect(sut.assertions['rerank.shape'].passed).toBe(sut.completed);
  });
});
