import type { RequestRecord } from '@fathom/contracts';
import { tokenStats } from './token-stats.util';

const record: RequestRecord = {
  requestId: 'r1',
  shard: 0,
  scheduledAt: 0,
  startedAt: 0,
  ttftMs: 10,
  e2eMs: 40,
  correctedE2eMs: 40,
  chunkOffsetsMs: [10, 20, 35, 40],
  status: 200,
  errorClass: null,
  inputTokensClient: 5,
  outputTokensClient: 4,
  usage: { promptTokens: 5, completionTokens: 5, cachedTokens: null },
  content: 'a b c d',
  finishReason: 'stop',
};

describe(tokenStats.name, () => {
  it('derives gaps between content chunks', () => {
    const sut = tokenStats(record);
    expect(sut).toMatchObject({ chunks: 4, gapCount: 3, gapMaxMs: 15, outputTokens: 4 });
    expect(sut.gapMeanMs).toBeCloseTo(10);
  });

  it('records the server/client token-count mismatch', () => {
    expect(tokenStats(record).tokenCountMismatch).toBe(1);
  });

  it('counts logprob entries as tokens when present', () => {
    const logprobs = Array.from({ length: 6 }, () => ({ token: 'x', logprob: -0.1, top: [] }));
    expect(tokenStats({ ...record, logprobs }).outputTokens).toBe(6);
  });

  it('has no gaps for an empty response', () => {
    expect(tokenStats({ ...record, chunkOffsetsMs: [], usage: null })).toMatchObject({
      gapCount: 0,
      gapMeanMs: null,
      tokenCountMismatch: null,
    });
  });
});
