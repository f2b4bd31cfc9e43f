/** Half-open token range [start, end). */
export interface TokenRange {
  readonly start: number;
  readonly end: number;
}

/** One response: the segments the detector flagged and the spans that were really planted. */
export interface ScoredResponse {
  readonly flagged: readonly TokenRange[];
  readonly planted: readonly TokenRange[];
}

export interface SpanScore {
  readonly responses: number;
  readonly plantedSpans: number;
  readonly flaggedSegments: number;
  /** Planted spans overlapped by at least one flagged segment / planted spans. */
  readonly spanRecall: number | null;
  /** Flagged segments overlapping a planted span / flagged segments. */
  readonly spanPrecision: number | null;
  /** Token level: |flagged and planted| / |planted|. */
  readonly tokenRecall: number | null;
  /** Token level: |flagged and planted| / |flagged|. */
  readonly tokenPrecision: number | null;
  /** Responses with no planted span that got a flag anyway. */
  readonly cleanResponsesFlagged: number;
}

/** Scores hallucination-risk segments against ground truth (the simulated target's planted spans). */
export function scoreAgainstPlantedSpans(responses: readonly ScoredResponse[]): SpanScore {
  let planted = 0;
  let flagged = 0;
  let spansHit = 0;
  let segmentsTrue = 0;
  let plantedTokens = 0;
  let flaggedTokens = 0;
  let overlapTokens = 0;
  let cleanFlagged = 0;
  const overlaps = (a: TokenRange, b: TokenRange) => a.start < b.end && b.start < a.end;
  for (const r of responses) {
    planted += r.planted.length;
    flagged += r.flagged.length;
    spansHit += r.planted.filter((p) => r.flagged.some((f) => overlaps(f, p))).length;
    segmentsTrue += r.flagged.filter((f) => r.planted.some((p) => overlaps(f, p))).length;
    if (r.planted.length === 0 && r.flagged.length > 0) cleanFlagged++;
    const plantedSet = tokenSet(r.planted);
    const flaggedSet = tokenSet(r.flagged);
    plantedTokens += plantedSet.size;
    flaggedTokens += flaggedSet.size;
    for (const t of flaggedSet) if (plantedSet.has(t)) overlapTokens++;
  }
  const ratio = (a: number, b: number) => (b === 0 ? null : a / b);
  return {
    responses: responses.length,
    plantedSpans: planted,
    flaggedSegments: flagged,
    spanRecall: ratio(spansHit, planted),
    spanPrecision: ratio(segmentsTrue, flagged),
    tokenRecall: ratio(overlapTokens, plantedTokens),
    tokenPrecision: ratio(overlapTokens, flaggedTokens),
    cleanResponsesFlagged: cleanFlagged,
  };
}

function tokenSet(ranges: readonly TokenRange[]): Set<number> {
  const out = new Set<number>();
  for (const r of ranges) for (let t = r.start; t < r.end; t++) out.add(t);
  return out;
}
