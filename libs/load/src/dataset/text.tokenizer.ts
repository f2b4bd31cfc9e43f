import { readFile } from 'node:fs/promises';
import type { TokenizerSpec } from '@fathom/contracts';
import * as o200k from 'gpt-tokenizer/cjs/encoding/o200k_base';
import { DatasetParseError } from './dataset-parse.error';
import { ONE_TOKEN_WORDS } from './synthetic-text.util';

/** The client-side tokenizer: counts, and the words synthetic prompts are made of. */
export interface TextTokenizer {
  /** `o200k_base`, `cl100k_base`, or `hf:<path>`. */
  readonly name: string;
  count(text: string): number;
  /** Words that are one token alone and after a space in this tokenizer: n of them, space-joined, make n tokens. */
  readonly oneTokenWords: readonly string[];
}

/** Fewer one-token words than this and synthetic prompts would repeat too much to be realistic. */
const MIN_ONE_TOKEN_WORDS = 16;

function fromCounter(name: string, count: (text: string) => number): TextTokenizer {
  const oneTokenWords = ONE_TOKEN_WORDS.filter(
    (w) => count(w) === 1 && count(` ${w}`) === 1 && count(`${w} ${w}`) === 2,
  );
  if (oneTokenWords.length < MIN_ONE_TOKEN_WORDS)
    throw new Error(`tokenizer ${name}: only ${oneTokenWords.length} common English words are one token`);
  return { name, count, oneTokenWords };
}

export const O200K_BASE: TextTokenizer = fromCounter('o200k_base', (t) => o200k.countTokens(t));
/**
 * cl100k_base, loaded on first use: its ranks cost ~90 ms to load in every thread that imports
 * this file (the main thread and each engine thread), and few scenarios ask for it.
 */
let cl100kBase: Promise<TextTokenizer> | null = null;

interface HfTokenizerLike {
  encode(text: string, options?: { add_special_tokens?: boolean }): { ids: number[] };
}

/** The tokenizer a scenario names (absent: o200k_base). A `tokenizer.json` is read and checked. */
export async function loadTokenizer(spec: TokenizerSpec | undefined): Promise<TextTokenizer> {
  if (spec === undefined || spec === 'o200k_base') return O200K_BASE;
  if (spec === 'cl100k_base')
    return (cl100kBase ??= import('gpt-tokenizer/cjs/encoding/cl100k_base').then((cl100k) =>
      fromCounter('cl100k_base', (t) => cl100k.countTokens(t)),
    ));
  const text = await readFile(spec.path, 'utf8').catch((error: Error) => {
    throw new DatasetParseError(spec.path, 0, `cannot read: ${error.message}`);
  });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new DatasetParseError(spec.path, 1, `not JSON (${(error as Error).message})`);
  }
  if (typeof json !== 'object' || json === null || !('model' in json))
    throw new DatasetParseError(spec.path, 1, 'not a Hugging Face tokenizer.json (no "model")');
  const { Tokenizer } = await import('@huggingface/tokenizers');
  let tokenizer: HfTokenizerLike;
  try {
    tokenizer = new Tokenizer(json, {}) as unknown as HfTokenizerLike;
    tokenizer.encode('probe', { add_special_tokens: false });
  } catch (error) {
    throw new DatasetParseError(spec.path, 1, `unusable tokenizer: ${(error as Error).message}`);
  }
  try {
    // Counts are of the text sent; the special tokens a server adds are its own.
    return fromCounter(
      `hf:${spec.path}`,
      (t) => tokenizer.encode(t, { add_special_tokens: false }).ids.length,
    );
  } catch (error) {
    throw new DatasetParseError(spec.path, 1, (error as Error).message);
  }
}
