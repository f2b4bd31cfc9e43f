import type { TokenLogprob } from '@fathom/contracts';
import {
  assessHallucinationRisk,
  centredWindowMeans,
  equalLikelihoodBoundary,
  TOKEN_RISK_BOUNDARY_BITS,
} from './hallucination-risk.detector';

/** Uniform over 2^bits candidates, all returned: entropy exactly `bits`. */
function tokenWithEntropy(bits: number, position: number): TokenLogprob {
  const n = Math.round(2 ** bits);
  const lp = Math.log(1 / n);
  return {
    token: `w${position}`,
    logprob: lp,
    top: Array.from({ length: n }, (_, i) => ({ token: i === 0 ? `w${position}` : `alt${i}`, logprob: lp })),
  };
}

function response(bits: number[]): TokenLogprob[] {
  return bits.map((b, i) => tokenWithEntropy(b, i));
}

describe(assessHallucinationRisk.name, () => {
  it('places the Bayes boundary between the spec distributions near 2.9 bits', () => {
    expect(TOKEN_RISK_BOUNDARY_BITS).toBeGreaterThan(2.7);
    expect(TOKEN_RISK_BOUNDARY_BITS).toBeLessThan(3.1);
    expect(equalLikelihoodBoundary(0, 1, 4, 1)).toBeCloseTo(2, 10);
  });

  it('marks a planted high-entropy span as one risk segment with exact edges', () => {
    const bits = [...new Array(20).fill(2), ...new Array(6).fill(5), ...new Array(20).fill(2)];
    const sut = assessHallucinationRisk(response(bits));
    expect(sut.status).toBe('ok');
    expect(sut.segments).toHaveLength(1);
    expect(sut.segments[0]).toMatchObject({ start: 20, end: 26 });
    expect(sut.segments[0].meanEntropyBits).toBeCloseTo(5, 6);
    expect(sut.rows[23].riskLevel).toBe('high');
    expect(sut.rows[5].riskLevel).toBe('low');
  });

  it('raises no segment on grounded text, and flags an isolated uncertain token only as elevated', () => {
    const bits = new Array(40).fill(2);
    bits[10] = 5;
    const sut = assessHallucinationRisk(response(bits));
    expect(sut.segments).toEqual([]);
    expect(sut.rows[10].riskLevel).toBe('elevated');
  });

  it('gives heat-map rows with position, confidence, entropy and the window-5 mean', () => {
    const sut = assessHallucinationRisk(response([1, 2, 3, 4, 5, 6]));
    expect(sut.rows.map((r) => r.position)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(sut.rows[2].windowMeanBits).toBeCloseTo(3, 6);
    expect(sut.rows[0].confidence).toBeCloseTo(0.5, 6);
    expect(sut.rows[0].windowMeanBits).toBeCloseTo(2, 6);
  });

  it('classifies missing logprobs and missing alternatives instead of reporting all-clear', () => {
    expect(assessHallucinationRisk([])).toMatchObject({ status: 'no-logprobs', rows: [], segments: [] });
    const bare = assessHallucinationRisk([
      { token: 'a', logprob: -3, top: [] },
      { token: 'b', logprob: -4, top: [] },
    ]);
    expect(bare.status).toBe('no-top-logprobs');
    expect(bare.rows.every((r) => r.riskLevel === 'unknown')).toBe(true);
  });

  it('computes centred window means truncated at the edges', () => {
    expect(Array.from(centredWindowMeans([0, 0, 10, 0, 0], 5))).toEqual([10 / 3, 2.5, 2, 2.5, 10 / 3]);
  });
});
