import { fnv1a, mix32, Prng } from './prng.util';
import { tokenize } from './tokenizer.util';

/** Half-open token index range [start, end) of a planted hallucinated span. */
export interface TokenSpan {
  start: number;
  end: number;
}

export interface PlannedToken {
  text: string;
  /** Natural log of the sampled token's probability (OpenAI's `logprob`). */
  logprob: number;
  /** Entropy of the full next-token distribution, in bits. */
  entropyBits: number;
  hallucinated: boolean;
  /** Rank of the sampled token in its distribution (0 = top-1). */
  rank: number;
  level: number;
  altSeed: number;
}

export interface OutputPlan {
  tokens: PlannedToken[];
  hallucinatedSpans: TokenSpan[];
  toolCall: { id: string; name: string; arguments: string } | null;
  /** The tokens are a refusal (the refusal_rate fault): rendered as `refusal`, not content. */
  refusal: boolean;
}

export interface OutputOptions {
  seed: number;
  /** What the model "read": the whole prompt text (it keys the text and the spans). */
  promptText: string;
  tokens: number;
  hallucinationRate: number;
  groundedEntropyBits: number;
  groundedEntropySd: number;
  hallucinatedEntropyBits: number;
  hallucinatedEntropySd: number;
  tool?: { name: string; parameters: unknown } | null;
  /** The tool_call_drift fault: how the tool call's arguments break its `parameters`. */
  argumentDrift?: 'type_change' | 'required_dropped' | 'extra_argument' | null;
  /** The refusal_rate fault drew this request: the answer is REFUSAL_TEXT, no tool call, no span. */
  refusal?: boolean;
}

/** What a refusing model answers (an opening the semantic refusal detector also knows). */
export const REFUSAL_TEXT = "I'm sorry, but I can't help with that request.";

// Next-token distributions: geometric p_i = (1 - r) r^i / (1 - r^V) over V = 64 candidates, one
// per entropy level (0.05-bit steps). H(r) is monotone in r, so each level's r is found by
// bisection once at load. The sampled token's logprob and the top_logprobs list are read off the
// level's table, so a detector that computes -sum p log2 p over them sees the planted entropy.
const CANDIDATES = 64;
const LEVEL_STEP_BITS = 0.05;
const MAX_BITS = Math.log2(CANDIDATES) - 0.05;

interface EntropyLevel {
  bits: number;
  logprobs: Float64Array;
  cumulative: Float64Array;
}

function geometric(r: number): Float64Array {
  const p = new Float64Array(CANDIDATES);
  let sum = 0;
  for (let i = 0; i < CANDIDATES; i++) sum += p[i] = Math.pow(r, i);
  for (let i = 0; i < CANDIDATES; i++) p[i] /= sum;
  return p;
}

function entropyBits(p: Float64Array): number {
  let h = 0;
  for (const x of p) if (x > 0) h -= x * Math.log2(x);
  return h;
}

const LEVELS: EntropyLevel[] = [];
for (let bits = 0.1; bits <= MAX_BITS; bits += LEVEL_STEP_BITS) {
  let lo = 1e-6;
  let hi = 1 - 1e-9;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (entropyBits(geometric(mid)) < bits) lo = mid;
    else hi = mid;
  }
  const p = geometric((lo + hi) / 2);
  const cumulative = new Float64Array(CANDIDATES);
  let c = 0;
  for (let i = 0; i < CANDIDATES; i++) cumulative[i] = c += p[i];
  LEVELS.push({ bits: entropyBits(p), logprobs: p.map((x) => Math.log(x)), cumulative });
}

function levelFor(bits: number): number {
  return Math.max(0, Math.min(LEVELS.length - 1, Math.round((bits - 0.1) / LEVEL_STEP_BITS)));
}

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an they ' +
  'you were her she there been one all we their has would when if so no will more can out other into do time ' +
  'only new some could these two may first then any like my now over such our man me even most made after also ' +
  'did many before must through back years where much your way well down should because each just those people ' +
  'how too little state good very make world still own see men work long get here between both life being under ' +
  'never day same another know while last might us great old year off come since against go came right used take ' +
  'three system report engine cache token latency server memory model request stream queue batch value signal river ' +
  'market energy policy history science network design product region capital water'
).split(' ');

/** Deterministic alternative token text for rank `rank` (not equal to `avoid`). */
function alternative(altSeed: number, rank: number, avoid: string): string {
  let h = mix32(altSeed, rank + 1);
  let word = ' ' + WORDS[h % WORDS.length];
  if (word === avoid) {
    h = mix32(h, 7);
    word = ' ' + WORDS[h % WORDS.length] + 's';
  }
  return word;
}

export interface TopLogprob {
  token: string;
  logprob: number;
}

/** The `k` most likely candidates at this position, the sampled one among them at its rank. */
export function topLogprobs(token: PlannedToken, k: number): TopLogprob[] {
  const level = LEVELS[token.level];
  const out: TopLogprob[] = [];
  const seen = new Set<string>([token.text]);
  for (let rank = 0; rank < k && rank < CANDIDATES; rank++) {
    if (rank === token.rank) {
      out.push({ token: token.text, logprob: level.logprobs[rank] });
      continue;
    }
    let text = alternative(token.altSeed, rank, token.text);
    while (seen.has(text)) text = text + 's';
    seen.add(text);
    out.push({ token: text, logprob: level.logprobs[rank] });
  }
  return out;
}

function sampleRank(level: EntropyLevel, u: number): number {
  for (let i = 0; i < CANDIDATES; i++) if (u < level.cumulative[i]) return i;
  return CANDIDATES - 1;
}

/** Argument values that satisfy a JSON-schema `parameters` object well enough for a client. */
function argumentsFor(parameters: unknown, rng: Prng): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const props = (parameters as { properties?: Record<string, { type?: string; enum?: unknown[] }> } | null)
    ?.properties;
  if (props === undefined || props === null || typeof props !== 'object') return out;
  for (const [name, schema] of Object.entries(props)) {
    if (Array.isArray(schema?.enum) && schema.enum.length > 0)
      out[name] = schema.enum[rng.int(schema.enum.length)];
    else if (schema?.type === 'number' || schema?.type === 'integer') out[name] = rng.int(100);
    else if (schema?.type === 'boolean') out[name] = rng.next() < 0.5;
    else if (schema?.type === 'array') out[name] = [];
    else if (schema?.type === 'object') out[name] = {};
    else out[name] = WORDS[rng.int(WORDS.length)];
  }
  return out;
}

/** Breaks `args` against `parameters` the way the tool_call_drift fault says (a copy). */
function driftArguments(
  args: Record<string, unknown>,
  parameters: unknown,
  drift: OutputOptions['argumentDrift'],
): Record<string, unknown> {
  if (!drift) return args;
  const out = { ...args };
  if (drift === 'extra_argument') {
    out['unexpected_argument'] = 'drifted';
    return out;
  }
  const required = (parameters as { required?: unknown } | null)?.required;
  const names = Array.isArray(required)
    ? required.filter((n): n is string => typeof n === 'string' && n in out)
    : [];
  const name = names[0] ?? Object.keys(out)[0];
  if (name === undefined) {
    out['unexpected_argument'] = 'drifted';
    return out;
  }
  if (drift === 'required_dropped') delete out[name];
  else out[name] = typeof out[name] === 'string' ? 42 : `${JSON.stringify(out[name])}`;
  return out;
}

/**
 * Plans a whole response before the engine emits it: texts, logprobs, and where the planted
 * hallucinated spans are. Same seed + same prompt text => same plan.
 */
export function planOutput(options: OutputOptions): OutputPlan {
  const key = fnv1a(options.promptText, options.seed >>> 0);
  const rng = new Prng(key);
  const spans: TokenSpan[] = [];
  let toolCall: OutputPlan['toolCall'] = null;
  let texts: string[];
  if (options.refusal) {
    texts = tokenize(REFUSAL_TEXT);
  } else if (options.tool) {
    const args = JSON.stringify(
      driftArguments(
        argumentsFor(options.tool.parameters, rng),
        options.tool.parameters,
        options.argumentDrift,
      ),
    );
    toolCall = {
      id: `call_${key.toString(36)}${rng.int(1e9).toString(36)}`,
      name: options.tool.name,
      arguments: args,
    };
    texts = tokenize(args);
    if (texts.length === 0) texts = [args];
  } else {
    texts = [];
    for (let i = 0; i < options.tokens; i++) {
      const word = WORDS[rng.int(WORDS.length)];
      if (i === 0) texts.push(word[0].toUpperCase() + word.slice(1));
      else if (i % 11 === 10) texts.push(rng.next() < 0.6 ? ',' : '.');
      else texts.push(' ' + word);
    }
    // One planted span of 4-8 tokens, placed after the first fifth of the answer.
    if (options.tokens >= 12 && rng.next() < options.hallucinationRate) {
      const length = 4 + rng.int(5);
      const start =
        Math.floor(options.tokens * 0.2) +
        rng.int(Math.max(1, options.tokens - length - Math.floor(options.tokens * 0.2)));
      spans.push({ start, end: Math.min(options.tokens, start + length) });
    }
  }
  const tokens: PlannedToken[] = texts.map((text, i) => {
    const hallucinated = spans.some((s) => i >= s.start && i < s.end);
    const bits = hallucinated
      ? Math.min(
          MAX_BITS,
          Math.max(3.4, rng.normal(options.hallucinatedEntropyBits, options.hallucinatedEntropySd)),
        )
      : Math.min(3.2, Math.max(0.6, rng.normal(options.groundedEntropyBits, options.groundedEntropySd)));
    const level = levelFor(bits);
    // Grounded tokens are the model's top choice; hallucinated ones are sampled from a flat tail.
    const rank = hallucinated ? sampleRank(LEVELS[level], rng.next()) : 0;
    return {
      text,
      logprob: LEVELS[level].logprobs[rank],
      entropyBits: LEVELS[level].bits,
      hallucinated,
      rank,
      level,
      altSeed: mix32(key, i),
    };
  });
  return { tokens, hallucinatedSpans: spans, toolCall, refusal: options.refusal === true };
}
