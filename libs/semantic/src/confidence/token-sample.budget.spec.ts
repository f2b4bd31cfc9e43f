import { TOKEN_SAMPLE_LIMITS } from '@fathom/contracts';
import type { HeatMapRow } from './hallucination-risk.detector';
import { TokenSampleBudget } from './token-sample.budget';

function rows(n: number, token = 'tok'): HeatMapRow[] {
  return Array.from({ length: n }, (_, i) => ({
    position: i,
    token,
    confidence: 0.9,
    entropyBits: i % 2 ? 0.5 : 3.5,
    windowMeanBits: 2,
    margin: 0.4,
    riskLevel: i % 2 ? 'low' : 'high',
  }));
}

describe(TokenSampleBudget.name, () => {
  it('keeps the first risky and the first plain responses up to their per-run limits', () => {
    const sut = new TokenSampleBudget();
    const span = [{ start: 0, end: 2, meanEntropyBits: 3, peakWindowMeanBits: 3.2 }];
    const risky = Array.from({ length: 20 }, () => sut.take(rows(4), span));
    const plain = Array.from({ length: 20 }, () => sut.take(rows(4), []));
    expect(risky.filter(Boolean)).toHaveLength(TOKEN_SAMPLE_LIMITS.riskyPerRun);
    expect(plain.filter(Boolean)).toHaveLength(TOKEN_SAMPLE_LIMITS.plainPerRun);
    expect(risky[0]!.spans).toEqual([{ start: 0, end: 2 }]);
    expect(risky[0]!.rows[0]).toEqual({ token: 'tok', entropyBits: 3.5, margin: 0.4, risk: 'high' });
  });

  it('cuts long responses and long tokens to the limits and says so', () => {
    const sut = new TokenSampleBudget();
    const sample = sut.take(rows(1000, 'x'.repeat(100)), [])!;
    expect(sample.rows).toHaveLength(TOKEN_SAMPLE_LIMITS.maxTokens);
    expect(sample.truncated).toBe(true);
    expect(sample.rows[0].token).toHaveLength(TOKEN_SAMPLE_LIMITS.maxTokenChars);
  });

  it('takes nothing from a response without rows', () => {
    expect(new TokenSampleBudget().take([], [])).toBeNull();
  });
});
