import { countTokens } from 'gpt-tokenizer';

/** A counter other than the default (the scenario's tokenizer); memoised apart from the default's. */
export type TokenCount = (text: string) => number;

/** What counts output tokens on the client (when the server sends no usage): say it with the figure. */
export const CLIENT_TOKENIZER = 'gpt-tokenizer, o200k_base';

/** Completions at most this long are remembered; longer ones are counted every time. */
const MEMO_MAX_CHARS = 8192;
/** Distinct completions remembered; the memo starts afresh when full (at most ~2 MB of strings). */
const MEMO_MAX_ENTRIES = 256;

const memos = new Map<TokenCount, Map<string, number>>();

/**
 * BPE over a run without a break (100k x's in one "word", a long run of spaces: a target's
 * garbage) is quadratic in the run's length: a target streaming such an answer had the engine
 * tokenise for minutes, its event loop blocked (no window, no timeout, no end). Text holding
 * such a run is counted in PIECE_CHARS pieces (each cut may add a token to what is garbage
 * anyway); past COUNTED_MAX_CHARS (~250k tokens, beyond any model's output) the count of the
 * first COUNTED_MAX_CHARS is scaled to the whole length, an estimate.
 */
const LONG_RUN = /\S{256}|\s{256}/;
const PIECE_CHARS = 256;
const COUNTED_MAX_CHARS = 1 << 20;

function boundedCount(content: string, counter: TokenCount): number {
  if (content.length > COUNTED_MAX_CHARS)
    return Math.round(
      (boundedCount(content.slice(0, COUNTED_MAX_CHARS), counter) * content.length) / COUNTED_MAX_CHARS,
    );
  if (content.length < PIECE_CHARS || !LONG_RUN.test(content)) return counter(content);
  let count = 0;
  for (let i = 0; i < content.length; i += PIECE_CHARS) count += counter(content.slice(i, i + PIECE_CHARS));
  return count;
}

/**
 * The client-side token count of a completion (gpt-tokenizer, o200k_base), remembered for the
 * completions seen last: greedy decoding over a dataset that cycles returns the same completion
 * for the same prompt, and tokenising it again cost ~2 us a request, about 8 % of the engine's
 * CPU per non-streamed request (bench/RESULTS.md). A completion not seen before costs one Map
 * lookup (hashing it, ~1 % of tokenising it) on top of the count.
 */
export function countOutputTokens(content: string, counter: TokenCount = countTokens): number {
  if (content === '') return 0;
  if (content.length > MEMO_MAX_CHARS) return boundedCount(content, counter);
  let memo = memos.get(counter);
  if (memo === undefined) memos.set(counter, (memo = new Map()));
  let count = memo.get(content);
  if (count === undefined) {
    count = boundedCount(content, counter);
    if (memo.size >= MEMO_MAX_ENTRIES) memo.clear();
    memo.set(content, count);
  }
  return count;
}
