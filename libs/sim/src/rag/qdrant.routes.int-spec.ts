import { QdrantClient } from '@qdrant/js-client-rest';
import { startSimTarget, type SimTarget } from '../http/sim.server';

describe('Qdrant-compatible routes, driven by the official @qdrant/js-client-rest', () => {
  let sim: SimTarget;
  let sut: QdrantClient;

  beforeAll(async () => {
    sim = await startSimTarget({
      config: { timeScale: 0.05, rag: { initialIndexSize: 500, retrieveJitterSigma: 0, retrievePerKMs: 2 } },
    });
    sut = new QdrantClient({ url: sim.url, checkCompatibility: false });
  });
  afterAll(() => sim.close());

  it('reports a 1.x server version, so the client compatibility check passes', async () => {
    expect((await sut.versionInfo()).version).toMatch(/^1\.\d+\.\d+$/);
  });

  it('creates a collection, upserts points and finds the nearest by search and by query', async () => {
    expect(await sut.collectionExists('docs')).toEqual({ exists: false });
    expect(await sut.createCollection('docs', { vectors: { size: 4, distance: 'Cosine' } })).toBe(true);
    const upsert = await sut.upsert('docs', {
      wait: true,
      points: [
        { id: 1, vector: [1, 0, 0, 0], payload: { text: 'cats' } },
        { id: 2, vector: [0, 1, 0, 0], payload: { text: 'cars' } },
        {
          id: '5c56c793-69f3-4fbf-87e6-c4bf54c28c26',
          vector: [0.9, 0.1, 0, 0],
          payload: { text: 'kittens' },
        },
      ],
    });
    expect(upsert.status).toBe('completed');
    expect((await sut.getCollection('docs')).points_count).toBe(3);

    const found = await sut.search('docs', { vector: [1, 0.05, 0, 0], limit: 2 });
    expect(found.map((p) => p.id)).toEqual([1, '5c56c793-69f3-4fbf-87e6-c4bf54c28c26']);
    expect(found[0].payload).toEqual({ text: 'cats' });
    expect(found[0].score).toBeGreaterThan(found[1].score);

    const queried = await sut.query('docs', { query: [0, 1, 0, 0], limit: 1, with_payload: true });
    expect(queried.points).toHaveLength(1);
    expect(queried.points[0]).toMatchObject({ id: 2, payload: { text: 'cars' } });
    const byId = await sut.query('docs', { query: 1, limit: 3 });
    expect(byId.points[0].id).toBe(1);
    expect(byId.points[0].payload).toBeNull();
  });

  it('serves the pre-loaded /rag index as the default collection, with its retrieve physics', async () => {
    const info = await sut.getCollection('fathom');
    expect(info.points_count).toBe(500);
    const query = Array.from({ length: 64 }, (_, d) => Math.cos(d));
    // Fastest of 3 calls each: a busy runner only ever adds time, the model's difference stays.
    const fastest = async (limit: number): Promise<{ ms: number; points: number }> => {
      let ms = Infinity;
      let points = 0;
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        points = (await sut.query('fathom', { query, limit })).points.length;
        ms = Math.min(ms, performance.now() - started);
      }
      return { ms, points };
    };
    const small = await fastest(1);
    const large = await fastest(500);
    expect(small.points).toBe(1);
    expect(large.points).toBe(500);
    // retrievePerKMs 2 (this test's config) x 499 more = +998 model ms = +50 wall ms at timeScale 0.05.
    expect(large.ms).toBeGreaterThan(small.ms + 25);
  });

  it('answers Qdrant-style errors: 404 for an unknown collection, 409 on create twice, 400 on a wrong dimension', async () => {
    await expect(sut.search('nope', { vector: [1, 0, 0, 0], limit: 1 })).rejects.toMatchObject({
      status: 404,
    });
    await expect(
      sut.createCollection('docs', { vectors: { size: 4, distance: 'Cosine' } }),
    ).rejects.toMatchObject({ status: 409 });
    const wrong = await fetch(`${sim.url}/collections/docs/points/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ vector: [1, 2], limit: 1 }),
    });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({
      status: { error: 'Wrong input: Vector dimension error: expected dim: 4, got 2' },
      time: expect.any(Number),
    });
    await expect(
      sut.search('docs', { vector: [1, 0, 0, 0], limit: 1, filter: { must: [] } }),
    ).rejects.toMatchObject({ status: 400 });
  });
});
