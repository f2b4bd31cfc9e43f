import type { DetectorSignal, RequestRecord } from '@fathom/contracts';
import { embeddingKlDivergence } from '@fathom/semantic';
import {
  RAG_MISMATCH_MIN_PAIRS,
  RagEmbeddingBudget,
  RagMismatchTally,
  RagMismatchWatch,
  planEmbeddings,
  ragMismatchKlThreshold,
  ragTexts,
} from './rag-mismatch.watch';

const DIMENSIONS = 512;

function record(i: number, extra: Partial<RequestRecord> = {}): RequestRecord {
  return {
    requestId: `r-${i}`,
    shard: 0,
    scheduledAt: 0,
    startedAt: 0,
    ttftMs: null,
    e2eMs: 5,
    correctedE2eMs: 5,
    chunkOffsetsMs: [],
    status: 200,
    errorClass: null,
    inputTokensClient: 3,
    outputTokensClient: 0,
    usage: null,
    content: `{"results":[${i}]}`,
    prompt: `query ${i}`,
    finishReason: null,
    ...extra,
  };
}

/** Seeded unit vectors (mulberry32): independent ones are about orthogonal in 512-d. */
function vectors(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
  const unit = (v: Float32Array) => {
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  };
  return {
    random: () => unit(Float32Array.from({ length: DIMENSIONS }, next)),
    /** A neighbour of `v` (cosine about 0.99). */
    near: (v: Float32Array) => unit(v.map((x) => x + 0.02 * next())),
  };
}

describe(ragTexts.name, () => {
  it('gives the query first, then the documents; null without a query, documents, or on failure', () => {
    expect(ragTexts(record(1, { retrievedDocuments: ['a', 'b'] }))).toEqual(['query 1', 'a', 'b']);
    expect(ragTexts(record(1))).toBeNull();
    expect(ragTexts(record(1, { retrievedDocuments: [] }))).toBeNull();
    expect(ragTexts(record(1, { retrievedDocuments: ['a'], prompt: undefined }))).toBeNull();
    expect(ragTexts(record(1, { retrievedDocuments: ['a'], errorClass: 'http-5xx' }))).toBeNull();
  });
});

describe(RagEmbeddingBudget.name, () => {
  it('charges a RAG record its query and documents: the next takes pay for them', () => {
    const sut = new RagEmbeddingBudget();
    const rag = record(1, { retrievedDocuments: ['a', 'b', 'c'] });
    const admitted = [rag, record(2), record(3), rag, record(4), record(5)].map((r) => sut.admit(r));
    expect(admitted).toEqual([true, false, false, false, true, true]);
  });

  it('keeps the texts embedded at about the takes over a mixed stream', () => {
    const sut = new RagEmbeddingBudget();
    let texts = 0;
    const takes = 1000;
    for (let i = 0; i < takes; i++) {
      const r = i % 3 === 0 ? record(i, { retrievedDocuments: ['a', 'b', 'c'] }) : record(i);
      if (sut.admit(r)) texts += ragTexts(r)?.length ?? 1;
    }
    expect(texts).toBeGreaterThanOrEqual(takes);
    expect(texts).toBeLessThanOrEqual(takes + 3);
  });
});

describe(planEmbeddings.name, () => {
  it('places responses by content and retrievals by query then documents', () => {
    const sut = planEmbeddings([record(1), record(2, { retrievedDocuments: ['d1', 'd2'] }), record(3)]);
    expect(sut.texts).toEqual(['{"results":[1]}', 'query 2', 'd1', 'd2', '{"results":[3]}']);
    expect(sut.responses.map((r) => [r.record.requestId, r.at])).toEqual([
      ['r-1', 0],
      ['r-3', 4],
    ]);
    expect(sut.retrievals.map((r) => [r.record.requestId, r.at, r.documents])).toEqual([['r-2', 1, 2]]);
  });
});

describe(RagMismatchTally.name, () => {
  it('scales the threshold with the dimensions: 1.17e-3 nats at 512-d', () => {
    expect(ragMismatchKlThreshold(512)).toBeCloseTo(1.17e-3, 5);
    expect(ragMismatchKlThreshold(256)).toBeCloseTo(2 * ragMismatchKlThreshold(512), 12);
  });

  it('finds neighbouring documents matched and unrelated ones over the threshold', () => {
    const v = vectors(7);
    const matched = new RagMismatchTally(ragMismatchKlThreshold(DIMENSIONS));
    const mismatched = new RagMismatchTally(ragMismatchKlThreshold(DIMENSIONS));
    for (let i = 0; i < 5; i++) {
      const q = v.random();
      matched.add(q, [v.near(q), v.near(q), v.near(q)]);
      mismatched.add(q, [v.random(), v.random(), v.random()]);
    }
    expect(matched.verdict()).toBe('matched');
    expect(matched.figures().overThresholdShare).toBe(0);
    expect(mismatched.verdict()).toBe('mismatched');
    expect(mismatched.figures().overThresholdShare).toBe(1);
    // Unrelated unit vectors: KL ~ (1 - cos) / d ~ 1 / 512.
    expect(mismatched.figures().meanKl).toBeGreaterThan(0.8 / DIMENSIONS);
    expect(mismatched.figures()).toMatchObject({ pairs: 15, records: 5 });
  });

  it('reports the mean, nearest-rank P95 and max of the pairs it saw', () => {
    const v = vectors(11);
    const sut = new RagMismatchTally(ragMismatchKlThreshold(DIMENSIONS));
    const kls: number[] = [];
    for (let i = 0; i < 20; i++) {
      const q = v.random();
      const docs = [v.near(q), v.random()];
      kls.push(...docs.map((d) => embeddingKlDivergence(q, d)));
      expect(sut.add(q, docs)).toEqual(kls.slice(-2));
    }
    const sorted = [...kls].sort((a, b) => a - b);
    const f = sut.figures();
    expect(f.meanKl).toBeCloseTo(kls.reduce((a, b) => a + b, 0) / kls.length, 12);
    expect(f.p95Kl).toBe(sorted[Math.ceil(0.95 * sorted.length) - 1]);
    expect(f.maxKl).toBe(sorted[sorted.length - 1]);
    expect(f.overThresholdShare).toBeCloseTo(0.5, 1);
  });

  it('gives no verdict below the minimum pairs', () => {
    const v = vectors(3);
    const sut = new RagMismatchTally(ragMismatchKlThreshold(DIMENSIONS));
    for (let i = 0; i < RAG_MISMATCH_MIN_PAIRS - 1; i++) sut.add(v.random(), [v.random()]);
    expect(sut.verdict()).toBe('no-verdict');
    sut.add(v.random(), [v.random()]);
    expect(sut.verdict()).toBe('mismatched');
  });
});

describe(RagMismatchWatch.name, () => {
  function setup() {
    const published: DetectorSignal[] = [];
    let now = 10_000;
    const sut = new RagMismatchWatch('c', 'run', {
      publish: (s) => Promise.resolve(void published.push(s)),
      now: () => now,
    });
    return { sut, published, advance: (ms: number) => (now += ms) };
  }
  /** One batch of `n` retrievals, each a query and 3 documents, matched or not. */
  function batch(v: ReturnType<typeof vectors>, n: number, matched: boolean) {
    const plan = planEmbeddings(
      Array.from({ length: n }, (_, i) => record(i, { retrievedDocuments: ['a', 'b', 'c'] })),
    );
    const out: Float32Array[] = [];
    for (let i = 0; i < n; i++) {
      const q = v.random();
      out.push(q, ...[0, 1, 2].map(() => (matched ? v.near(q) : v.random())));
    }
    return { retrievals: plan.retrievals, vectors: out };
  }

  it('publishes progress at most every 2 s, a new verdict at once, and a final warning when documents do not match', async () => {
    const { sut, published, advance } = setup();
    const v = vectors(5);
    for (let i = 0; i < 4; i++) {
      const b = batch(v, 2, false);
      await sut.observe(b.retrievals, b.vectors, DIMENSIONS);
      advance(700);
    }
    expect(published.map((s) => s.id)).toEqual([
      'run/rag-mismatch/progress-0',
      'run/rag-mismatch/progress-1',
    ]);
    expect(published[0].severity).toBe('info'); // 6 pairs: no verdict yet
    // The second batch (12 pairs, 0.7 s in) brings the first verdict: out at once, not at 2 s.
    expect(published[1]).toMatchObject({ severity: 'warning', figures: { pairs: 12, mismatched: 1 } });
    await sut.finish(true, Promise.resolve());
    const final = published[published.length - 1];
    expect(final).toMatchObject({
      id: 'run/rag-mismatch/final',
      detector: 'rag-mismatch',
      severity: 'warning',
    });
    expect(final.figures).toMatchObject({
      pairs: 24,
      records: 8,
      overThresholdShare: 1,
      mismatched: 1,
      complete: 1,
    });
    expect(final.figures.p95Kl).toBeGreaterThan(final.figures.thresholdKl);
  });

  it('ends with info when documents match, and waits for the embedding in flight', async () => {
    const { sut, published } = setup();
    const v = vectors(9);
    const late = batch(v, 5, true);
    const settled = new Promise<void>((resolve) =>
      setTimeout(() => void sut.observe(late.retrievals, late.vectors, DIMENSIONS).then(resolve), 10),
    );
    await sut.finish(true, settled);
    const final = published.find((s) => s.id === 'run/rag-mismatch/final');
    expect(final?.severity).toBe('info');
    expect(final?.figures).toMatchObject({ pairs: 15, overThreshold: 0, mismatched: 0 });
    expect(final?.message).toMatch(/retrieved documents match their queries/);
  });

  it('publishes nothing for a run without RAG documents', async () => {
    const { sut, published } = setup();
    await sut.observe([], [], DIMENSIONS);
    await sut.finish(true, Promise.resolve());
    expect(published).toEqual([]);
  });
});
