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
 * The client-side token count of a completion (gpt-tokenizer, o200k_base), remembered for the
 * completions seen last: greedy decoding over a dataset that cycles returns the same completion
 * for the same prompt, and tokenising it again cost ~2 us a request, about 8 % of the engine's
 * CPU per non-streamed request (bench/RESULTS.md). A completion not seen before costs one Map
 * lookup (hashing it, ~1 % of tokenising it) on top of the count.
 */
export function countOutputTokens(content: string, counter: TokenCount = countTokens): number {
  if (content === '') return 0;
  if (content.length > MEMO_MAX_CHARS) return counter(content);
  let memo = memos.get(counter);
  if (memo === undefined) memos.set(counter, (memo = new Map()));
  let count = memo.get(content);
  if (count === undefined) {
    count = counter(content);
    if (memo.size >= MEMO_MAX_ENTRIES) memo.clear();
    memo.set(content, count);
  }
  return count;
}
