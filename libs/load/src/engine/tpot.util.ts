/**
 * Time per output token, as vLLM and GuideLLM define it: (E2E - TTFT) / (output tokens - 1), in ms.
 * Null without a first token or with fewer than 2 output tokens (no decode interval to divide).
 */
export function tpotMs(e2eMs: number, ttftMs: number | null, outputTokens: number): number | null {
  if (ttftMs === null || outputTokens < 2) return null;
  return Math.max(0, e2eMs - ttftMs) / (outputTokens - 1);
}
