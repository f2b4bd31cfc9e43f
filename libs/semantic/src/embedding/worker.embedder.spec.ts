import { monitorEventLoopDelay } from 'node:perf_hooks';
import { cosineSimilarity } from './embedding-drift.util';
import { UseLiteEmbedder } from './use-lite.embedder';
import { EmbedderUnavailableError, WorkerEmbedder, type WorkerEmbedderFault } from './worker.embedder';

const texts = [
  'How do I reset my password?',
  'What is the procedure to change my password?',
  'The stock market crashed today.',
  '',
  'KV caching keeps the attention keys and values of earlier tokens so the model does not recompute them.',
];

describe(WorkerEmbedder.name, () => {
  jest.setTimeout(120_000);
  let sut: WorkerEmbedder | null = null;
  afterEach(async () => sut?.close());

  it('gives the in-thread USE-lite vectors (cosine > 0.999) without holding the caller loop', async () => {
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    sut = new WorkerEmbedder({ model: { kind: 'use-lite' } });
    await sut.ready();
    const vectors = await sut.embed([...texts, ...texts, ...texts]);
    loop.disable();
    expect(sut.name).toBe(new UseLiteEmbedder().name);
    expect(sut.dimensions).toBe(512);
    const reference = await new UseLiteEmbedder().embed(texts);
    expect(vectors).toHaveLength(texts.length * 3);
    vectors.forEach((v, i) => {
      expect(v).toHaveLength(512);
      expect(cosineSimilarity(v, reference[i % texts.length])).toBeGreaterThan(0.999);
    });
    // Model load (about 0.4-2 s) and 15 texts ran in the worker; in-thread they are one block.
    expect(loop.max / 1e6).toBeLessThan(250);
  });

  it('rejects calls in flight when the worker dies, reports it, restarts it and embeds again', async () => {
    const faults: WorkerEmbedderFault[] = [];
    sut = new WorkerEmbedder({
      model: { kind: 'use-lite' },
      restartBackoffMs: (n) => 50 * n,
      onFault: (f) => faults.push(f),
    });
    await sut.ready();
    const [before] = await sut.embed([texts[0]]);
    const inFlight = sut.embed(texts);
    await sut.killWorker();
    await expect(inFlight).rejects.toBeInstanceOf(EmbedderUnavailableError);
    expect(sut.available).toBe(false);
    await expect(sut.embed([texts[0]])).rejects.toBeInstanceOf(EmbedderUnavailableError);
    expect(faults).toEqual([
      expect.objectContaining({ kind: 'exited', consecutiveDeaths: 1, restartInMs: 50 }),
    ]);

    const deadline = Date.now() + 60_000;
    while (!sut.available && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(sut.starts).toBe(2);
    const [after] = await sut.embed([texts[0]]);
    expect(cosineSimilarity(before, after)).toBeGreaterThan(0.999);

    await sut.killWorker();
    expect(faults[1]).toMatchObject({ kind: 'exited', consecutiveDeaths: 2, restartInMs: 100 });
  });

  it('reports a model that cannot load once, and does not restart it', async () => {
    const faults: WorkerEmbedderFault[] = [];
    sut = new WorkerEmbedder({
      model: { kind: 'onnx', folder: '/nonexistent/fathom-model' },
      restartBackoffMs: () => 10,
      onFault: (f) => faults.push(f),
    });
    await expect(sut.ready()).rejects.toThrow(/no model.onnx/);
    await new Promise((r) => setTimeout(r, 200));
    expect(faults).toEqual([expect.objectContaining({ kind: 'load-failed', restartInMs: null })]);
    expect(sut.starts).toBe(1);
    await expect(sut.embed(['x'])).rejects.toThrow(/model did not load/);
  });
});
