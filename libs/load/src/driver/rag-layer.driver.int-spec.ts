import { CampaignSpecSchema, RETRIEVED_DOCUMENT_LIMITS, type RequestRecord } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { runShard, type ShardResult } from '../engine/run-shard';
import { mergeWindows, type WindowSnapshot } from '../measure/window.snapshot';

const texts = {
  type: 'inline',
  prompts: ['invoice totals for march', 'refund policy', 'shipping to norway', 'gpu memory limits'],
};

function run(
  sim: SimTarget,
  scenario: unknown,
  concurrency = 2,
  windows: WindowSnapshot[] = [],
  records: RequestRecord[] = [],
): Promise<ShardResult> {
  return runShard({
    spec: CampaignSpecSchema.parse({
      name: 'rag',
      target: { baseUrl: `${sim.url}/v1` },
      scenario,
      // Every request a record: the tests compare each record with what it sent.
      load: { concurrency, durationMs: 400, recordSampleRate: 1 },
    }),
    shard: { index: 0, count: 1 },
    runId: 'r',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: (r) => void records.push(r), window: (w) => void windows.push(w) },
    signal: new AbortController().signal,
  });
}

describe('RAG layers in isolation against the simulated target', () => {
  let sim: SimTarget;
  beforeAll(async () => {
    sim = await startSimTarget({
      port: 0,
      config: { timeScale: 0.1, rag: { initialIndexSize: 1000, rerankMaxConcurrency: 2 } },
    });
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

  it('carries the top 3 retrieved texts, best first, once the index holds texts', async () => {
    const docs = await startSimTarget({ port: 0, config: { timeScale: 0.1, rag: { initialIndexSize: 0 } } });
    try {
      const long = 'x'.repeat(RETRIEVED_DOCUMENT_LIMITS.maxChars + 100);
      await run(
        docs,
        {
          type: 'rag',
          layer: 'index',
          dataset: { type: 'inline', prompts: [...texts.prompts, long] },
          batchSize: 5,
        },
        1,
      );
      const records: RequestRecord[] = [];
      const sut = await run(docs, { type: 'rag', layer: 'retrieve', dataset: texts, k: 20 }, 2, [], records);
      expect(sut.errors).toBe(0);
      expect(records.length).toBe(sut.sent);
      for (const record of records) {
        const retrieved = record.retrievedDocuments ?? [];
        expect(retrieved).toHaveLength(3);
        for (const doc of retrieved)
          expect(doc.length).toBeLessThanOrEqual(RETRIEVED_DOCUMENT_LIMITS.maxChars);
        // The sim embeds texts by their words: the query's own text is the best match.
        expect(retrieved[0]).toBe(record.prompt);
      }
    } finally {
      await docs.close();
    }
  });

  it('carries no documents when the index has no texts (the pre-loaded synthetic vectors)', async () => {
    const synthetic = await startSimTarget({
      port: 0,
      config: { timeScale: 0.1, rag: { initialIndexSize: 100 } },
    });
    try {
      const records: RequestRecord[] = [];
      await run(synthetic, { type: 'rag', layer: 'retrieve', dataset: texts, k: 3 }, 2, [], records);
      expect(records.length).toBeGreaterThan(0);
      expect(records.every((r) => r.errorClass === null && r.retrievedDocuments === undefined)).toBe(true);
    } finally {
      await synthetic.close();
    }
  });

  it('reranks documents other than the query and carries the top 3 by relevance', async () => {
    const records: RequestRecord[] = [];
    // One user, 3 documents drawn after each query from a 4-prompt cycle: never the query itself.
    const sut = await run(
      sim,
      { type: 'rag', layer: 'rerank', dataset: texts, batchSize: 3 },
      1,
      [],
      records,
    );
    expect(sut.errors).toBe(0);
    expect(records.length).toBe(sut.sent);
    for (const record of records) {
      const retrieved = record.retrievedDocuments ?? [];
      expect(new Set(retrieved)).toEqual(new Set(texts.prompts.filter((p) => p !== record.prompt)));
    }
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
