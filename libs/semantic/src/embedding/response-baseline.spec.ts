import fc from 'fast-check';
import {
  MAX_RESPONSES_PER_PROMPT,
  ResponseBaseline,
  ResponseBaselineRecorder,
  ResponseDriftTally,
  decodeVector,
  encodeVector,
  intentLabeller,
  preferUseful,
} from './response-baseline';

const unit = (...v: number[]) => Float32Array.from(v);

function baselineOf(items: [key: string, vector: Float32Array][], maxItems = 100): ResponseBaseline {
  const recorder = new ResponseBaselineRecorder(maxItems);
  for (const [key, vector] of items) recorder.add(key, `prompt ${key}`, vector);
  // Through JSON, as the jsonb column gives it back.
  return ResponseBaseline.fromData(
    JSON.parse(JSON.stringify(recorder.toData({ runId: 'run-a', embedder: 'test', dimensions: 3 }))),
  );
}

describe('response baseline storage', () => {
  it('round-trips float32 vectors through base64 exactly', () => {
    fc.assert(
      fc.property(fc.array(fc.float({ noNaN: true }), { minLength: 1, maxLength: 64 }), (values) => {
        const v = Float32Array.from(values);
        expect(Array.from(decodeVector(encodeVector(v), v.length))).toEqual(Array.from(v));
      }),
    );
  });

  it('refuses a vector of the wrong width and data of another format, naming why', () => {
    expect(() => decodeVector(encodeVector(unit(1, 2)), 3)).toThrow('2 dimensions, expected 3');
    expect(() => ResponseBaseline.fromData({ format: 'other', items: [] })).toThrow(
      /not a semantic-responses baseline/,
    );
  });

  it('keeps at most maxItems in all and MAX_RESPONSES_PER_PROMPT per prompt', () => {
    const sut = new ResponseBaselineRecorder(6);
    for (let i = 0; i < 10; i++) sut.add('a', 'same prompt', unit(1, 0, 0));
    expect(sut.size).toBe(MAX_RESPONSES_PER_PROMPT);
    expect(sut.wants('a')).toBe(false);
    for (const key of ['b', 'c', 'd']) sut.add(key, key, unit(0, 1, 0));
    expect(sut.size).toBe(6);
    expect(sut.wants('e')).toBe(false);
  });
});

describe(ResponseDriftTally.name, () => {
  it('compares each response with the centroid of the baseline responses to the same prompt', () => {
    const baseline = baselineOf([
      ['a', unit(1, 0, 0)],
      ['a', unit(0, 1, 0)],
      ['b', unit(0, 0, 2)],
    ]);
    const sut = new ResponseDriftTally(baseline, { minCosine: 0.42, minPairs: 2 });
    expect(sut.add('a', unit(1, 1, 0))).toBeCloseTo(1, 6);
    expect(sut.add('b', unit(0, 0, 1))).toBeCloseTo(1, 6);
    expect(sut.add('unknown prompt', unit(1, 0, 0))).toBeNull();
    expect(sut.figures()).toEqual({
      pairs: 2,
      meanCosine: expect.closeTo(1, 6),
      minCosine: expect.closeTo(1, 6),
      drifted: 0,
      driftedShare: 0,
      flagged: false,
    });
    sut.add('b', unit(1, 0, 0)); // orthogonal: cosine 0 < 0.42
    expect(sut.figures()).toMatchObject({ pairs: 3, drifted: 1, driftedShare: 1 / 3, flagged: true });
  });

  it('does not flag below minPairs however drifted the few pairs are', () => {
    const sut = new ResponseDriftTally(baselineOf([['a', unit(1, 0, 0)]]), { minPairs: 5 });
    for (let i = 0; i < 4; i++) sut.add('a', unit(0, 1, 0));
    expect(sut.figures()).toMatchObject({ pairs: 4, drifted: 4, flagged: false });
    sut.add('a', unit(0, 1, 0));
    expect(sut.figures().flagged).toBe(true);
  });
});

describe(intentLabeller.name, () => {
  it('labels by the first matching rule, null when none matches, and by the prompt key without rules', () => {
    const sut = intentLabeller([
      { label: 'refund', pattern: 'refund|money back', flags: 'i' },
      { label: 'billing', pattern: 'invoice|bill', flags: 'i' },
    ]);
    expect(sut('I want my MONEY BACK for this invoice', 'k1')).toBe('refund');
    expect(sut('Where is my invoice?', 'k2')).toBe('billing');
    expect(sut('Tell me a joke', 'k3')).toBeNull();
    expect(intentLabeller(undefined)('Tell me a joke', 'k3')).toBe('k3');
  });
});

describe(preferUseful.name, () => {
  it('keeps the sample size and swaps useless sampled items for useful unsampled ones, in order', () => {
    const candidates = ['a1', 'a2', 'b1', 'c1', 'b2', 'd1'];
    const perPrompt = new Map<string, number>();
    // Useful: a prompt seen fewer than once so far (counts what it accepted).
    const useful = (id: string) => {
      const n = perPrompt.get(id[0]) ?? 0;
      if (n >= 1) return false;
      perPrompt.set(id[0], n + 1);
      return true;
    };
    expect(preferUseful(['a1', 'a2', 'b2'], candidates, useful)).toEqual(['a1', 'b1', 'c1']);
  });

  it('keeps a useless sampled item when no useful candidate is left', () => {
    expect(preferUseful(['x'], ['x', 'y'], () => false)).toEqual(['x']);
    expect(preferUseful([], ['x'], () => true)).toEqual([]);
  });
});
