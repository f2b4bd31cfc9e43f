import { jsonOpenDepth } from './anomaly.rules';

/** Width of the anomaly head's input: STRUCTURAL_FEATURES dense slots, then hashed n-grams. */
export const FRAGMENT_FEATURES = 2048;
const STRUCTURAL_FEATURES = 8;
const HASHED = FRAGMENT_FEATURES - STRUCTURAL_FEATURES;
/** The featuriser reads this much of a fragment (head and tail halves), like the rules. */
export const FEATURE_SCAN_CHARS = 2_000;

/** A sparse feature vector: unique indices into [0, FRAGMENT_FEATURES) and their values. */
export interface SparseFeatures {
  readonly indices: Int32Array;
  readonly values: Float32Array;
}

const TOKEN = /[a-z0-9]+(?:'[a-z]+)?|[{}[\]":,<>|\\]/g;

/**
 * Fragment -> features, the input contract of the anomaly head (and of a user's model trained
 * by the same script): word unigrams and bigrams (lower-cased; JSON punctuation kept as tokens),
 * hashed into HASHED buckets with log(1 + count), L2-normalised; then 8 dense structural slots
 * in [0, 1]: open JSON depth, repetition (1 - distinct/total tokens), longest run of one token,
 * non-letter share, length, starts like JSON, no closing punctuation, U+FFFD/control share.
 * Deterministic: the training script and the monitor must compute the same vector.
 */
export function fragmentFeatures(text: string): SparseFeatures {
  const scanned =
    text.length <= FEATURE_SCAN_CHARS
      ? text
      : `${text.slice(0, FEATURE_SCAN_CHARS / 2)} ${text.slice(-FEATURE_SCAN_CHARS / 2)}`;
  const tokens = scanned.toLowerCase().match(TOKEN) ?? [];
  const counts = new Map<number, number>();
  const add = (h: number) => counts.set(h, (counts.get(h) ?? 0) + 1);
  let longestRun = tokens.length > 0 ? 1 : 0;
  let run = 1;
  let previous = 0;
  for (let i = 0; i < tokens.length; i++) {
    const h = hash(tokens[i]);
    add(STRUCTURAL_FEATURES + (h % HASHED));
    if (i > 0) {
      add(STRUCTURAL_FEATURES + (pair(previous, h) % HASHED));
      run = tokens[i] === tokens[i - 1] ? run + 1 : 1;
      if (run > longestRun) longestRun = run;
    }
    previous = h;
  }
  let norm2 = 0;
  for (const [h, c] of counts) {
    const v = Math.log1p(c);
    counts.set(h, v);
    norm2 += v * v;
  }
  const scale = norm2 > 0 ? 1 / Math.sqrt(norm2) : 0;

  let nonLetters = 0;
  let broken = 0;
  for (let i = 0; i < scanned.length; i++) {
    const c = scanned.charCodeAt(i);
    const letter = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c > 0x7f;
    if (!letter && c !== 0x20) nonLetters++;
    if (c === 0xfffd || (c < 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09)) broken++;
  }
  const trimmed = scanned.trim();
  const distinct = new Set(tokens).size;
  const dense = [
    Math.min(1, jsonOpenDepth(scanned) / 3),
    tokens.length >= 8 ? 1 - distinct / tokens.length : 0,
    Math.min(1, (longestRun - 1) / 5),
    scanned.length > 0 ? nonLetters / scanned.length : 0,
    Math.min(1, Math.log10(1 + scanned.length) / 4),
    /^(?:```\w*\s*)?[{[]/.test(trimmed) ? 1 : 0,
    trimmed.length > 0 && !/[.!?}\])"'`*:]$/.test(trimmed) ? 1 : 0,
    scanned.length > 0 ? Math.min(1, (20 * broken) / scanned.length) : 0,
  ];
  const indices: number[] = [];
  const values: number[] = [];
  dense.forEach((v, i) => {
    if (v !== 0) {
      indices.push(i);
      values.push(v);
    }
  });
  for (const [h, v] of counts) {
    indices.push(h);
    values.push(v * scale);
  }
  return { indices: Int32Array.from(indices), values: Float32Array.from(values) };
}

/** Writes `features` densely into row `row` of `out` ([rows x FRAGMENT_FEATURES], zeroed by the caller). */
export function writeDense(features: SparseFeatures, out: Float32Array, row: number): void {
  const base = row * FRAGMENT_FEATURES;
  for (let i = 0; i < features.indices.length; i++) out[base + features.indices[i]] = features.values[i];
}

/** An ordered pair of token hashes (a bigram) mixed into one, without building the bigram string. */
function pair(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ b;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  return (h ^ (h >>> 15)) >>> 0;
}

/** 32-bit FNV-1a over UTF-16 code units: a feature bucket, not a security hash. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
