import { TOKEN_SAMPLE_LIMITS, type TokenSample } from '@fathom/contracts';
import type { HeatMapRow, RiskSegment } from './hallucination-risk.detector';

/**
 * Chooses which responses of one run keep their per-token confidence rows for the report's heat
 * map: the first `riskyPerRun` responses with hallucination-risk spans and the first
 * `plainPerRun` without (so a reader sees both what risk looks like and what normal looks like),
 * each cut to `maxTokens` rows. The rows of every other response are dropped after judging.
 * One instance per run; not thread-shared.
 */
export class TokenSampleBudget {
  private risky = 0;
  private plain = 0;

  constructor(private readonly limits: typeof TOKEN_SAMPLE_LIMITS = TOKEN_SAMPLE_LIMITS) {}

  /** The sample to carry for this response, or null when it is not kept (or has no rows). */
  take(rows: readonly HeatMapRow[], segments: readonly RiskSegment[]): TokenSample | null {
    if (rows.length === 0) return null;
    if (segments.length > 0) {
      if (this.risky >= this.limits.riskyPerRun) return null;
      this.risky++;
    } else {
      if (this.plain >= this.limits.plainPerRun) return null;
      this.plain++;
    }
    return {
      rows: rows.slice(0, this.limits.maxTokens).map((r) => ({
        token: r.token.slice(0, this.limits.maxTokenChars),
        entropyBits: Number.isFinite(r.entropyBits) ? Math.max(0, r.entropyBits) : 0,
        margin: r.margin !== null && Number.isFinite(r.margin) ? r.margin : null,
        risk: r.riskLevel,
      })),
      truncated: rows.length > this.limits.maxTokens,
      spans: segments.map((s) => ({ start: s.start, end: s.end })),
    };
  }
}
