import type { TokenLogprob } from '@fathom/contracts';
import { NEG_INF_LOGPROB } from '../stream/chat-stream.assembler';

/**
 * What the entropy of one position rests on: the server's `top_logprobs` (`top-logprobs`), only
 * the sampled token's own logprob (`sampled-only`: `top_logprobs` was empty, as OpenAI sends it
 * when the request asked for logprobs but no alternatives).
 */
export type EntropyBasis = 'top-logprobs' | 'sampled-only';

export interface TokenConfidence {
  token: string;
  /** p of the sampled token, exp(logprob); 0 for vLLM's -9999 sentinel. */
  probability: number;
  /** Estimated entropy of the next-token distribution, bits (see `tokenConfidence`). */
  entropyBits: number;
  /** p(top1) - p(top2); null when the server returned no alternatives to rank. */
  margin: number | null;
  /** Probability mass the returned candidates do not cover (0..1). */
  tailMass: number;
  basis: EntropyBasis;
}

const LOG2E = Math.LOG2E;

/** exp(logprob), with vLLM's -9999 (and anything below) as exactly 0. */
export function probabilityOf(logprob: number): number {
  return logprob <= NEG_INF_LOGPROB ? 0 : Math.exp(logprob);
}

/** -p log2 p with 0 log 0 = 0. */
function surprisalTerm(p: number): number {
  return p > 0 ? -p * Math.log(p) * LOG2E : 0;
}

/**
 * Per-token confidence from one logprob entry.
 *
 * Entropy is -sum p log2 p over the returned candidates (the `top_logprobs`, plus the sampled
 * token when it is not among them) and over the tail mass r = 1 - sum p the server did not
 * return. The tail is treated as the LEAST entropic completion consistent with the data:
 * the top-k are by definition the k most likely tokens, so no tail token can be more likely
 * than the smallest returned one, p_min; the tail is therefore packed into floor(r / p_min)
 * tokens of p_min plus one remainder token. Why: this needs no guess at the vocabulary size
 * (a uniform spread over 100k tokens would swamp the figure with an assumption), it is a lower
 * bound on the true entropy, it grows with k towards the exact value, and unlike lumping the
 * tail into one outcome it does not let a flat distribution cut at k = 5 look confident
 * (five tokens of 0.05 with r = 0.75 read 1.4 bits lumped but 4.3 bits here; the truth is at
 * least that). With no alternatives returned (`sampled-only`) nothing bounds the tail tokens,
 * so the tail is one outcome of mass 1 - p: the binary entropy, at most 1 bit.
 */
export function tokenConfidence(entry: TokenLogprob): TokenConfidence {
  const probability = probabilityOf(entry.logprob);
  const top = entry.top;
  if (top.length === 0) {
    const tail = Math.max(0, 1 - probability);
    return {
      token: entry.token,
      probability,
      entropyBits: surprisalTerm(probability) + surprisalTerm(tail),
      margin: null,
      tailMass: tail,
      basis: 'sampled-only',
    };
  }

  let known = 0;
  let entropy = 0;
  let p1 = 0;
  let p2 = 0;
  let pMin = Infinity;
  let sampledListed = false;
  // Duplicated tokens in top_logprobs (seen from some servers) count once.
  const seen = top.length > 8 ? new Set<string>() : null;
  for (let i = 0; i < top.length; i++) {
    const candidate = top[i];
    if (seen !== null) {
      if (seen.has(candidate.token)) continue;
      seen.add(candidate.token);
    } else if (isEarlierDuplicate(top, i)) continue;
    const p = probabilityOf(candidate.logprob);
    if (candidate.token === entry.token) sampledListed = true;
    known += p;
    entropy += surprisalTerm(p);
    if (p > p1) {
      p2 = p1;
      p1 = p;
    } else if (p > p2) p2 = p;
    if (p > 0 && p < pMin) pMin = p;
  }
  if (!sampledListed) {
    // Sampled outside the top-k (temperature sampling): a known outcome as well.
    known += probability;
    entropy += surprisalTerm(probability);
  }
  const tail = Math.max(0, 1 - known);
  entropy += packedTailEntropy(tail, pMin);
  // With a single candidate the runner-up is at most min(p1, tail): the margin's lower bound.
  if (countDistinct(top) < 2) p2 = Math.min(p1, tail);
  return {
    token: entry.token,
    probability,
    entropyBits: entropy,
    margin: p1 - p2,
    tailMass: tail,
    basis: 'top-logprobs',
  };
}

/** Entropy of mass `tail` split into tokens of at most `cap` each, as few as possible. */
function packedTailEntropy(tail: number, cap: number): number {
  if (tail <= 1e-12) return 0;
  if (!Number.isFinite(cap) || cap >= tail) return surprisalTerm(tail);
  const full = Math.floor(tail / cap);
  const remainder = tail - full * cap;
  return full * surprisalTerm(cap) + surprisalTerm(remainder);
}

function isEarlierDuplicate(top: TokenLogprob['top'], i: number): boolean {
  const token = top[i].token;
  for (let j = 0; j < i; j++) if (top[j].token === token) return true;
  return false;
}

function countDistinct(top: TokenLogprob['top']): number {
  if (top.length < 2) return top.length;
  return new Set(top.map((t) => t.token)).size;
}
