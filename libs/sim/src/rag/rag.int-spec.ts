import { startSimTarget, type SimTarget } from '../http/sim.server';

describe('RAG layers, tools and agents over HTTP', () => {
  let sut: SimTarget;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${sut.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    sut = await startSimTarget({
      config: {
        timeScale: 0.05,
        rag: { initialIndexSize: 2000, rerankBaseMs: 20000, retrieveJitterSigma: 0, upsertSlowdownAt: 20000 },
      },
    });
  });
  afterAll(() => sut.close());

  it('retrieves the nearest text, and retrieval time grows with k and with the index', async () => {
    await post('/rag/index/upsert', {
      vectors: [
        { id: 'cats', text: 'cats purr and sleep all day' },
        { id: 'cars', text: 'engines burn fuel on the road' },
      ],
    });
    const near = (await (await post('/rag/retrieve', { query: 'cats purr and sleep', k: 1 })).json()) as {
      results: { id: string }[];
      service_ms: number;
    };
    expect(near.results[0].id).toBe('cats');
    const big = (await (await post('/rag/retrieve', { query: 'cats', k: 100 })).json()) as {
      results: unknown[];
      service_ms: number;
    };
    expect(big.results).toHaveLength(100);
    expect(big.service_ms).toBeGreaterThan(near.service_ms + 10);
    const vectors = Array.from({ length: 3000 }, (_, i) => ({
      id: `bulk-${i}`,
      text: `document number ${i}`,
    }));
    const upsert = (await (await post('/rag/index/upsert', { vectors })).json()) as { indexSize: number };
    expect(upsert.indexSize).toBe(5002);
    const grown = (await (await post('/rag/retrieve', { query: 'cats purr and sleep', k: 1 })).json()) as {
      service_ms: number;
    };
    expect(grown.service_ms).toBeGreaterThan(near.service_ms + 4);
  });

  it('charges more per upserted vector as the index grows', async () => {
    const costPerVector = async (): Promise<number> => {
      const vectors = Array.from({ length: 100 }, (_, i) => ({
        id: `c-${Math.random()}-${i}`,
        vector: Array.from({ length: 64 }, (_, d) => Math.sin(i + d)),
      }));
      const body = (await (await post('/rag/index/upsert', { vectors })).json()) as { costMs: number };
      return body.costMs / 100;
    };
    const small = await costPerVector();
    await post('/rag/index/upsert', {
      vectors: Array.from({ length: 6000 }, (_, i) => ({ id: `grow-${i}`, text: `g ${i}` })),
    });
    expect(await costPerVector()).toBeGreaterThan(small * 1.15);
  });

  it('caps the reranker at 32 in flight and fails the rest fast', async () => {
    const started = Date.now();
    const responses = await Promise.all(
      Array.from({ length: 40 }, () => post('/rag/rerank', { query: 'q', documents: ['a', 'b'] })),
    );
    const busy = responses.filter((r) => r.status === 503);
    expect(responses.filter((r) => r.status === 200)).toHaveLength(32);
    expect(busy).toHaveLength(8);
    expect(((await busy[0].json()) as { error: { message: string } }).error.message).toBe(
      'reranker busy: 32/32 in use',
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('routes x-gray-flag: v2 to tool v2.1 and everything else to v1.9', async () => {
    const v2 = await post('/tools/orders/invoke', { order_id: 'A1' }, { 'x-gray-flag': 'v2' });
    expect(v2.headers.get('x-tool-version')).toBe('v2.1');
    expect(((await v2.json()) as { total: unknown }).total).toMatchObject({ currency: expect.any(String) });
    const v1 = await post('/tools/orders/invoke', { order_id: 'A1' });
    expect(v1.headers.get('x-tool-version')).toBe('v1.9');
    expect(typeof ((await v1.json()) as { total: unknown }).total).toBe('number');
    const doc = (await (await fetch(`${sut.url}/tools/orders/v1.9/openapi.json`)).json()) as {
      openapi: string;
      info: { version: string };
    };
    expect(doc.info.version).toBe('1.9');
    expect((await post('/tools/orders/invoke', {})).status).toBe(400);
    expect((await post('/tools/nope/invoke', {})).status).toBe(404);
  });
});
