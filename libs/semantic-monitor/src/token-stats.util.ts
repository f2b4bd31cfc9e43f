import type { RequestRecord } from '@fathom/contracts';

export interface TokenStats {
  outputTokens: number;
  chunks: number;
  gapCount: number;
  gapMeanMs: number | null;
  gapMaxMs: number | null;
  tokenCountMismatch: number | null;
}

/**
 * Token-level view of one streamed response. Output tokens are the logprob entries when the
 * server returned them (one chunk can carry several tokens), else the content chunks. Gaps are
 * the inter-token latencies: every gap between consecutive content chunks.
 */
export function tokenStats(record: RequestRecord): TokenStats {
  const offsets = record.chunkOffsetsMs;
  let gapSum = 0;
  let gapMax: number | null = null;
  for (let i = 1; i < offsets.length; i++) {
    const gap = offsets[i] - offsets[i - 1];
    gapSum += gap;
    gapMax = gapMax === null ? gap : Math.max(gapMax, gap);
  }
  const gapCount = Math.max(0, offsets.length - 1);
  const outputTokens = record.logprobs?.length ? record.logprobs.length : offsets.length;
  return {
    outputTokens,
    chunks: offsets.length,
    gapCount,
    gapMeanMs: gapCount ? gapSum / gapCount : null,
    gapMaxMs: gapMax,
    tokenCountMismatch: record.usage ? record.usage.completionTokens - record.outputTokensClient : null,
  };
}
