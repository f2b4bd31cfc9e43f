import type { TokenLogprob } from '@fathom/contracts';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseChatStream } from '../stream/parse-chat-stream';
import { probabilityOf, tokenConfidence } from './token-entropy.util';

/** A logprob entry for a full distribution `p`, the top `k` returned, token `sampled` chosen. */
function entryFor(p: number[], k: number, sampled = 0): TokenLogprob {
  const order = p.map((_, i) => i).sort((a, b) => p[b] - p[a]);
  return {
    token: `t${sampled}`,
    logprob: Math.log(p[sampled]),
    top: order.slice(0, k).map((i) => ({ token: `t${i}`, logprob: Math.log(p[i]) })),
  };
}

const exactEntropy = (p: number[]): number => p.reduce((h, x) => (x > 0 ? h - x * Math.log2(x) : h), 0);

describe('tokenConfidence', () => {
  it('is exact when the returned candidates cover the distribution', () => {
    const sut = tokenConfidence(entryFor([0.25, 0.25, 0.25, 0.25], 4));
    expect(sut.entropyBits).toBeCloseTo(2, 10);
    expect(sut.tailMass).toBeCloseTo(0, 10);
    expect(sut.margin).toBeCloseTo(0, 10);
  });

  it('packs the missing tail into tokens no likelier than the last returned one', () => {
    // 20 tokens of 0.05, 5 returned: the tail can only be 15 more tokens of 0.05.
    const sut = tokenConfidence(entryFor(new Array(20).fill(0.05), 5));
    expect(sut.entropyBits).toBeCloseTo(Math.log2(20), 6);
    expect(sut.tailMass).toBeCloseTo(0.75, 10);
  });

  it('gives the binary entropy when no alternatives were returned', () => {
    const sut = tokenConfidence({ token: 'a', logprob: Math.log(0.5), top: [] });
    expect(sut).toMatchObject({ basis: 'sampled-only', margin: null });
    expect(sut.entropyBits).toBeCloseTo(1, 10);
  });

  it("treats vLLM's -9999 as probability 0 and counts a sampled token outside the top-k", () => {
    expect(probabilityOf(-9999)).toBe(0);
    const sut = tokenConfidence({
      token: 'z',
      logprob: Math.log(0.1),
      top: [
        { token: 'a', logprob: Math.log(0.9) },
        { token: 'b', logprob: -9999 },
      ],
    });
    expect(sut.entropyBits).toBeCloseTo(exactEntropy([0.9, 0.1]), 10);
    expect(sut.margin).toBeCloseTo(0.9, 10);
  });

  it('computes the margin p(top1) - p(top2) on the recorded top_logprobs example', () => {
    const doc = readFileSync(
      join(__dirname, '..', '__fixtures__', 'openai-openapi__chat-logprobs-top_logprobs2-example.json'),
      'utf8',
    );
    const first = tokenConfidence(parseChatStream(doc).logprobs[0]);
    expect(first.margin).toBeCloseTo(Math.exp(-0.31725305) - Math.exp(-1.3190403), 8);
    expect(first.entropyBits).toBeGreaterThan(exactEntropy([Math.exp(-0.31725305), Math.exp(-1.3190403)]));
  });

  const distribution = fc
    .array(fc.double({ min: 0.001, max: 1, noNaN: true }), { minLength: 2, maxLength: 40 })
    .map((w) => {
      const sum = w.reduce((a, b) => a + b, 0);
      return w.map((x) => x / sum);
    });

  it('never exceeds the true entropy and rises towards it as k grows (property)', () => {
    fc.assert(
      fc.property(distribution, fc.nat(), (p, sampledSeed) => {
        const sampled = sampledSeed % p.length;
        const truth = exactEntropy(p);
        let previous = -Infinity;
        for (let k = 1; k <= p.length; k++) {
          const h = tokenConfidence(entryFor(p, k, sampled)).entropyBits;
          expect(h).toBeLessThanOrEqual(truth + 1e-9);
          expect(h).toBeGreaterThanOrEqual(previous - 1e-9);
          previous = h;
        }
        expect(previous).toBeCloseTo(truth, 6);
      }),
      { numRuns: 200 },
    );
  });
});
