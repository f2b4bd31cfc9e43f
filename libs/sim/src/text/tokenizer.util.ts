import { fnv1a } from './prng.util';

// GPT-style pre-tokenisation (a word with its leading space, a digit run, a punctuation run).
// It approximates BPE token counts of English within ~15 % and is an order of magnitude faster
// than a real BPE, which matters on the hot path. Ids are FNV hashes of the pieces, so equal
// prefixes give equal id prefixes (what the prefix cache keys on).
const PIECE = / ?[A-Za-z]{1,12}| ?\d{1,3}| ?[^\sA-Za-z\d]+|\s+(?!\S)|\s+/g;

export function tokenize(text: string): string[] {
  return text.match(PIECE) ?? [];
}

export function tokenIds(text: string): Uint32Array {
  const pieces = tokenize(text);
  const ids = new Uint32Array(pieces.length);
  for (let i = 0; i < pieces.length; i++) ids[i] = fnv1a(pieces[i]);
  return ids;
}
