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

  it('loads at paragraph, sentence and token granularity, each dyed so the target can tell them apart', async () => {
    const target = await startSimTarget({
      port: 0,
      config: { timeScale: 0.1, rag: { initialIndexSize: 0 } },
    });
    try {
      const corpus = {
        type: 'inline',
        prompts: [
          'Invoices are due in March. Refunds take five days.\n\nShipping to Norway is slow. GPUs are scarce.',
        ],
      };
      const sent: Record<string, string[]> = {};
      for (const granularity of ['paragraph', 'sentence', 'token'] as const) {
        const records: RequestRecord[] = [];
        const result = await run(
          target,
          { type: 'rag', layer: 'index', dataset: corpus, batchSize: 1, granularity },
          1,
          [],
          records,
        );
        expect(result.errors).toBe(0);
        sent[granularity] = [...new Set(records.map((r) => r.prompt ?? ''))].sort();
      }
      // In order from the first piece; how many went depends on this machine's speed in 400 ms.
      const paragraphs = [
        'Invoices are due in March. Refunds take five days.',
        'Shipping to Norway is slow. GPUs are scarce.',
      ];
      const sentences = paragraphs.flatMap((p) => p.split(/(?<=\.) /));
      const words = paragraphs.join(' ').split(' ');
      expect(sent.paragraph).toContain(paragraphs[0]);
      for (const p of sent.paragraph) expect(paragraphs).toContain(p);
      expect(sent.sentence).toContain(sentences[0]);
      for (const x of sent.sentence) expect(sentences).toContain(x);
      expect(sent.token).toContain('Invoices');
      for (const t of sent.token) expect(words).toContain(t);
      const stats = (await (await fetch(`${target.url}/sim/stats`)).json()) as {
        ragTraffic: Record<string, number>;
      };
      expect(Object.keys(stats.ragTraffic).sort()).toEqual([
        'index/paragraph',
        'index/sentence',
        'index/token',
      ]);
      for (const n of Object.values(stats.ragTraffic)) expect(n).toBeGreaterThan(0);
    } finally {
      await target.close();
    }
  });
});
