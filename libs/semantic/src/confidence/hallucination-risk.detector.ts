import type { TokenLogprob } from '@fathom/contracts';
import { tokenConfidence } from './token-entropy.util';

export type RiskLevel = 'low' | 'elevated' | 'high' | 'unknown';

/** One row of the token-position heat map. */
export interface HeatMapRow {
  position: number;
  token: string;
  /** p of the sampled token. */
  confidence: number;
  entropyBits: number;
  /** Mean entropy of the centred window around this position, bits. */
  windowMeanBits: number;
  margin: number | null;
  riskLevel: RiskLevel;
}

/** Half-open token range [start, end) judged a hallucination risk. */
export interface RiskSegment {
  start: number;
  end: number;
  meanEntropyBits: number;
  peakWindowMeanBits: number;
}

/**
 * `ok`: alternatives were returned for most tokens; `no-logprobs`: nothing to judge;
 * `no-top-logprobs`: only the sampled tokens' own logprobs (entropy capped at 1 bit, so risk
 * levels are `unknown` rather than a false all-clear).
 */
export type ConfidenceStatus = 'ok' | 'no-logprobs' | 'no-top-logprobs';

export interface ConfidenceReport {
  status: ConfidenceStatus;
  rows: HeatMapRow[];
  segments: RiskSegment[];
  meanEntropyBits: number | null;
  maxWindowMeanBits: number | null;
  /** Share of positions whose entropy rests on `top_logprobs`. */
  topLogprobsCoverage: number;
}

export interface HallucinationRiskOptions {
  /** Sliding window, tokens (spec: "e.g. 5 tokens"). Centred; truncated at the edges. */
  window?: number;
  /** Window mean at or above which a position is `elevated`. */
  elevatedBits?: number;
  /** Window mean at or above which a position is `high` and joins a risk segment. */
  highBits?: number;
  /** A rise of the window mean over the response's baseline that marks `elevated` on its own. */
  riseBits?: number;
  /** A token inside a high window counts in the segment when its own entropy reaches this. */
  tokenBits?: number;
}

// Spec, anomaly class 3: grounded facts about 2.1 +/- 0.3 bits, hallucinated 4.8 +/- 0.9 bits.
const FACT_MEAN_BITS = 2.1;
const FACT_SD_BITS = 0.3;
const HALLUCINATED_MEAN_BITS = 4.8;
const HALLUCINATED_SD_BITS = 0.9;

/**
 * Where the two spec distributions are equally likely (equal priors): the Bayes boundary
 * between "fact" and "hallucinated" for one observation. Solves
 * (x-m1)^2/s1^2 + 2 ln s1 = (x-m2)^2/s2^2 + 2 ln s2 for the root between the means.
 */
export function equalLikelihoodBoundary(m1: number, s1: number, m2: number, s2: number): number {
  const a = 1 / (s1 * s1) - 1 / (s2 * s2);
  const b = -2 * (m1 / (s1 * s1) - m2 / (s2 * s2));
  const c = (m1 * m1) / (s1 * s1) - (m2 * m2) / (s2 * s2) + 2 * Math.log(s1 / s2);
  if (Math.abs(a) < 1e-12) return -c / b;
  const d = Math.sqrt(Math.max(0, b * b - 4 * a * c));
  const roots = [(-b - d) / (2 * a), (-b + d) / (2 * a)];
  return roots.find((x) => x >= Math.min(m1, m2) && x <= Math.max(m1, m2)) ?? (m1 + m2) / 2;
}

/** About 2.91 bits: one token's entropy above it is likelier hallucinated than grounded. */
export const TOKEN_RISK_BOUNDARY_BITS = equalLikelihoodBoundary(
  FACT_MEAN_BITS,
  FACT_SD_BITS,
  HALLUCINATED_MEAN_BITS,
  HALLUCINATED_SD_BITS,
);

export const DEFAULT_HALLUCINATION_RISK: Required<HallucinationRiskOptions> = {
  window: 5,
  // Two standard deviations above grounded text: rarely reached by a window of facts.
  elevatedBits: FACT_MEAN_BITS + 2 * FACT_SD_BITS,
  highBits: TOKEN_RISK_BOUNDARY_BITS,
  // Half the gap between the spec's two means: a "sudden rise" even in high-entropy prose.
  riseBits: (HALLUCINATED_MEAN_BITS - FACT_MEAN_BITS) / 2,
  tokenBits: TOKEN_RISK_BOUNDARY_BITS,
};

/**
 * Scores one response's tokens: per-token entropy and margin, the centred sliding-window mean,
 * a risk level per position and the risk segments. A segment is a run of positions whose
 * window mean is `high`, tightened to the tokens in it (or in the window that flagged it)
 * whose own entropy reaches `tokenBits`, so its edges sit on the uncertain tokens rather than
 * on the window's smear. Cost: O(tokens x top_logprobs); no allocation per candidate.
 */
export function assessHallucinationRisk(
  logprobs: readonly TokenLogprob[],
  options: HallucinationRiskOptions = {},
): ConfidenceReport {
  const o = { ...DEFAULT_HALLUCINATION_RISK, ...options };
  const n = logprobs.length;
  if (n === 0) {
    return {
      status: 'no-logprobs',
      rows: [],
      segments: [],
      meanEntropyBits: null,
      maxWindowMeanBits: null,
      topLogprobsCoverage: 0,
    };
  }
  const entropy = new Float64Array(n);
  const confidence: ReturnType<typeof tokenConfidence>[] = new Array(n);
  let covered = 0;
  let total = 0;
  for (let i = 0; i < n; i++) {
    const c = tokenConfidence(logprobs[i]);
    confidence[i] = c;
    entropy[i] = c.entropyBits;
    total += c.entropyBits;
    if (c.basis === 'top-logprobs') covered++;
  }
  const coverage = covered / n;
  const windowMean = centredWindowMeans(entropy, Math.max(1, Math.floor(o.window)));
  // Baseline for the "sudden rise": the response's median entropy, robust to the spike itself.
  const baseline = median(entropy);
  const assessable = coverage >= 0.5;

  const rows: HeatMapRow[] = new Array(n);
  let maxWindow = -Infinity;
  for (let i = 0; i < n; i++) {
    const w = windowMean[i];
    if (w > maxWindow) maxWindow = w;
    let risk: RiskLevel = 'unknown';
    if (assessable) {
      if (w >= o.highBits) risk = 'high';
      // A lone spike is worth a colour on the heat map, not a segment of its own.
      else if (w >= o.elevatedBits || w - baseline >= o.riseBits || entropy[i] >= o.tokenBits)
        risk = 'elevated';
      else risk = 'low';
    }
    rows[i] = {
      position: i,
      token: confidence[i].token,
      confidence: confidence[i].probability,
      entropyBits: entropy[i],
      windowMeanBits: w,
      margin: confidence[i].margin,
      riskLevel: risk,
    };
  }

  const segments = assessable ? riskSegments(rows, entropy, o) : [];
  return {
    status: assessable ? 'ok' : 'no-top-logprobs',
    rows,
    segments,
    meanEntropyBits: total / n,
    maxWindowMeanBits: maxWindow,
    topLogprobsCoverage: coverage,
  };
}

function riskSegments(
  rows: HeatMapRow[],
  entropy: Float64Array,
  o: Required<HallucinationRiskOptions>,
): RiskSegment[] {
  const n = rows.length;
  const half = Math.floor(o.window / 2);
  const segments: RiskSegment[] = [];
  let i = 0;
  while (i < n) {
    if (rows[i].riskLevel !== 'high') {
      i++;
      continue;
    }
    let j = i;
    let peak = rows[i].windowMeanBits;
    while (j + 1 < n && rows[j + 1].riskLevel === 'high') {
      j++;
      peak = Math.max(peak, rows[j].windowMeanBits);
    }
    // Tighten to uncertain tokens within reach of the flagged windows.
    const lo = Math.max(0, i - half);
    const hi = Math.min(n - 1, j + half);
    let first = -1;
    let last = -1;
    for (let k = lo; k <= hi; k++) {
      if (entropy[k] >= o.tokenBits) {
        if (first === -1) first = k;
        last = k;
      }
    }
    if (first === -1) {
      first = i;
      last = j;
    }
    const previous = segments[segments.length - 1];
    if (previous !== undefined && first <= previous.end) {
      previous.end = Math.max(previous.end, last + 1);
      previous.peakWindowMeanBits = Math.max(previous.peakWindowMeanBits, peak);
      previous.meanEntropyBits = meanOf(entropy, previous.start, previous.end);
    } else {
      segments.push({
        start: first,
        end: last + 1,
        meanEntropyBits: meanOf(entropy, first, last + 1),
        peakWindowMeanBits: peak,
      });
    }
    i = j + 1;
  }
  return segments;
}

/** Mean over [i - floor(w/2), i + ceil(w/2) - 1], truncated at the edges. O(n). */
export function centredWindowMeans(values: ArrayLike<number>, window: number): Float64Array {
  const n = values.length;
  const out = new Float64Array(n);
  const prefix = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) prefix[i + 1] = prefix[i] + values[i];
  const before = Math.floor(window / 2);
  const after = window - 1 - before;
  for (let i = 0; i < n; i++) {
    const lo = Math.max(0, i - before);
    const hi = Math.min(n - 1, i + after);
    out[i] = (prefix[hi + 1] - prefix[lo]) / (hi - lo + 1);
  }
  return out;
}

function meanOf(values: Float64Array, start: number, end: number): number {
  let sum = 0;
  for (let i = start; i < end; i++) sum += values[i];
  return end > start ? sum / (end - start) : 0;
}

function median(values: Float64Array): number {
  const sorted = Float64Array.from(values).sort();
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
