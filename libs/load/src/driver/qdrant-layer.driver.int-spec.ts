import { CampaignSpecSchema, type RequestRecord } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { QdrantClient } from '@qdrant/js-client-rest';
import { runShard, type ShardResult } from '../engine/run-shard';
import { mergeWindows, type WindowSnapshot } from '../measure/window.snapshot';

const texts = {
  type: 'inline',
  prompts: ['invoice totals for march', 'refund policy', 'shipping to norway', 'gpu memory limits'],
};

function run(
  sim: SimTarget,
  scenario: unknown,
  windows: WindowSnapshot[] = [],
  records: RequestRecord[] = [],
): Promise<ShardResult> {
  return runShard({
    spec: CampaignSpecSchema.parse({
      name: 'qdrant',
      target: { baseUrl: `${sim.url}/v1` },
      scenario,
      // Every request a record: the tests compare each record with what it sent.
      load: { concurrency: 4, durationMs: 400, recordSampleRate: 1 },
    }),
    shard: { index: 0, count: 1 },
    runId: 'r',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: (r) => void records.push(r), window: (w) => void windows.push(w) },
    signal: new AbortController().signal,
  });
}

describe('RAG index and retrieve layers through @qdrant/js-client-rest (campaign runs against the sim)', () => {
  let sim: SimTarget;
  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.1, rag: { initialIndexSize: 1000 } } });
  });
  afterAll(() => sim.close());

  it('creates the collection, then upserts batches that land in it', async () => {
    const sut = await run(sim, {
      type: 'rag',
      layer: 'index',
      dataset: texts,
      batchSize: 8,
      qdrant: { collection: 'load', create: { size: 32 } },
    });
    expect(sut.sent).toBeGreaterThan(2);
    expect(sut.errors).toBe(0);
    expect(sut.assertions['index.shape']).toEqual({ passed: sut.sent, failed: 0 });
    const info = await new QdrantClient({ url: sim.url, checkCompatibility: false }).getCollection('load');
    expect(info.points_count).toBe(sut.sent * 8);
  });

  it('retrieves top-k by query and by search from the pre-loaded collection', async () => {
    const windows: WindowSnapshot[] = [];
    const sut = await run(
      sim,
      { type: 'rag', layer: 'retrieve', dataset: texts, k: 20, qdrant: {} },
      windows,
    );
    expect(sut.errors).toBe(0);
    expect(sut.assertions['retrieve.shape']).toEqual({ passed: sut.sent, failed: 0 });
    expect(mergeWindows(windows).requests).toBe(sut.sent);
    const search = await run(sim, {
      type: 'rag',
      layer: 'retrieve',
      dataset: texts,
      k: 5,
      qdrant: { api: 'search', withPayload: true },
    });
    expect(search.errors).toBe(0);
    expect(search.assertions['retrieve.shape'].passed).toBe(search.sent);
  });

  it("carries the top points' payload texts as retrievedDocuments with withPayload, none without", async () => {
    await run(sim, {
      type: 'rag',
      layer: 'index',
      dataset: texts,
      batchSize: 4,
      qdrant: { collection: 'docs', create: { size: 32 } },
    });
    const withTexts: RequestRecord[] = [];
    const sut = await run(
      sim,
      {
        type: 'rag',
        layer: 'retrieve',
        dataset: texts,
        k: 10,
        qdrant: { collection: 'docs', withPayload: true },
      },
      [],
      withTexts,
    );
    expect(sut.errors).toBe(0);
    expect(withTexts.length).toBe(sut.sent);
    for (const record of withTexts) {
      expect(record.retrievedDocuments).toHaveLength(3);
      for (const doc of record.retrievedDocuments ?? []) expect(texts.prompts).toContain(doc);
      // The same client-side hash embeds query and document: the query's own text ranks first.
      expect(record.retrievedDocuments?.[0]).toBe(record.prompt);
    }
    const without: RequestRecord[] = [];
    await run(
      sim,
      { type: 'rag', layer: 'retrieve', dataset: texts, k: 10, qdrant: { collection: 'docs' } },
      [],
      without,
    );
    expect(without.length).toBeGreaterThan(0);
    expect(without.every((r) => r.retrievedDocuments === undefined)).toBe(true);
  });

  it('classifies injected 5xx from the Qdrant routes as http-5xx', async () => {
    sim.faults.set({ kind: 'http_5xx', rate: 1, status: 503, durationMs: 60000 });
    try {
      const windows: WindowSnapshot[] = [];
      const sut = await run(
        sim,
        { type: 'rag', layer: 'retrieve', dataset: texts, k: 5, qdrant: {} },
        windows,
      );
      expect(sut.sent).toBeGreaterThan(0);
      expect(mergeWindows(windows).errorClasses).toEqual({ 'http-5xx': sut.sent });
    } finally {
      sim.faults.clear('http_5xx');
    }
  });

  it('refuses to start when the collection does not exist and no create is given', async () => {
    await expect(
      run(sim, { type: 'rag', layer: 'retrieve', dataset: texts, qdrant: { collection: 'absent' } }),
    ).rejects.toThrow("Qdrant collection 'absent' does not exist");
  });

  it('refuses qdrant on the rerank layer', () => {
    const parsed = CampaignSpecSchema.safeParse({
      name: 'x',
      target: { baseUrl: 'http://h/v1' },
      scenario: { type: 'rag', layer: 'rerank', dataset: texts, qdrant: {} },
      load: { concurrency: 1, durationMs: 1 },
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0].path).toEqual(['scenario', 'qdrant']);
  });
});
