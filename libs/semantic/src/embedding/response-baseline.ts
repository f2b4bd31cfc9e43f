import { z } from 'zod';
import type { IntentRule } from '@fathom/contracts';
import { cosineSimilarity } from './embedding-drift.util';

/** `baselines.name` of the response embeddings a run stores for later runs to be compared with. */
export const RESPONSE_BASELINE_NAME = 'semantic-responses';

/** Responses kept per prompt: enough for a centroid and for a classifier to see some variation. */
export const MAX_RESPONSES_PER_PROMPT = 4;

/** Characters of a prompt kept with its responses, so that a later run's intent rules can relabel it. */
const PROMPT_CHARS = 1000;

/** One stored response: its prompt's fingerprint, the prompt (capped) and the response's embedding. */
export interface BaselineResponse {
  readonly key: string;
  readonly prompt: string;
  readonly vector: Float32Array;
}

/**
 * The stored form (jsonb). Vectors are float32 little-endian in base64: 2.7 kB for 512
 * dimensions instead of about 5 kB as JSON numbers.
 */
export const ResponseBaselineDataSchema = z
  .object({
    format: z.literal('fathom.semantic-baseline.v1'),
    runId: z.string(),
    /** The embedder's name: responses embedded by another model are not comparable. */
    embedder: z.string(),
    dimensions: z.number().int().positive(),
    items: z.array(z.object({ key: z.string().min(1), prompt: z.string(), vector: z.string() }).strict()),
  })
  .strict();
export type ResponseBaselineData = z.infer<typeof ResponseBaselineDataSchema>;

export function encodeVector(v: Float32Array): string {
  const bytes = new Uint8Array(v.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < v.length; i++) view.setFloat32(i * 4, v[i], true);
  return Buffer.from(bytes).toString('base64');
}

export function decodeVector(text: string, dimensions: number): Float32Array {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length !== dimensions * 4)
    throw new Error(`a stored vector has ${bytes.length / 4} dimensions, expected ${dimensions}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(dimensions);
  for (let i = 0; i < dimensions; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/**
 * Collects a run's sampled responses for storage as a baseline, bounded: at most `maxItems` in
 * all and `MAX_RESPONSES_PER_PROMPT` per prompt; first come, first kept (later ones add nothing
 * a bounded store could keep without evicting).
 */
export class ResponseBaselineRecorder {
  private readonly items: BaselineResponse[] = [];
  private readonly perKey = new Map<string, number>();

  constructor(private readonly maxItems: number) {}

  get size(): number {
    return this.items.length;
  }

  /** True while a response to this prompt would still be kept. */
  wants(key: string): boolean {
    return this.items.length < this.maxItems && (this.perKey.get(key) ?? 0) < MAX_RESPONSES_PER_PROMPT;
  }

  add(key: string, prompt: string, vector: Float32Array): boolean {
    if (!this.wants(key)) return false;
    this.items.push({ key, prompt: prompt.slice(0, PROMPT_CHARS), vector });
    this.perKey.set(key, (this.perKey.get(key) ?? 0) + 1);
    return true;
  }

  toData(meta: { runId: string; embedder: string; dimensions: number }): ResponseBaselineData {
    return {
      format: 'fathom.semantic-baseline.v1',
      ...meta,
      items: this.items.map((i) => ({ key: i.key, prompt: i.prompt, vector: encodeVector(i.vector) })),
    };
  }
}

/** A stored baseline, decoded: responses grouped by prompt, each prompt's centroid precomputed. */
export class ResponseBaseline {
  private readonly centroids = new Map<string, Float64Array>();

  private constructor(
    readonly runId: string,
    readonly embedder: string,
    readonly dimensions: number,
    readonly items: readonly BaselineResponse[],
  ) {
    const sums = new Map<string, { sum: Float64Array; n: number }>();
    for (const item of items) {
      let s = sums.get(item.key);
      if (!s) sums.set(item.key, (s = { sum: new Float64Array(dimensions), n: 0 }));
      const unit = unitVector(item.vector);
      for (let d = 0; d < dimensions; d++) s.sum[d] += unit[d];
      s.n++;
    }
    for (const [key, s] of sums)
      this.centroids.set(
        key,
        s.sum.map((v) => v / s.n),
      );
  }

  /** Parses the stored jsonb; throws with the reason when it is not a baseline of this format. */
  static fromData(data: unknown): ResponseBaseline {
    const parsed = ResponseBaselineDataSchema.safeParse(data);
    if (!parsed.success)
      throw new Error(
        `not a ${RESPONSE_BASELINE_NAME} baseline: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      );
    const d = parsed.data;
    return new ResponseBaseline(
      d.runId,
      d.embedder,
      d.dimensions,
      d.items.map((i) => ({ key: i.key, prompt: i.prompt, vector: decodeVector(i.vector, d.dimensions) })),
    );
  }

  get prompts(): number {
    return this.centroids.size;
  }

  has(key: string): boolean {
    return this.centroids.has(key);
  }

  /** Mean of the unit vectors of the baseline's responses to this prompt; undefined when it has none. */
  centroid(key: string): Float64Array | undefined {
    return this.centroids.get(key);
  }
}

function unitVector(v: ArrayLike<number>): Float64Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += v[i] * v[i];
  const s = n > 0 ? 1 / Math.sqrt(n) : 0;
  const out = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i] * s;
  return out;
}

/**
 * The intent of a prompt: with rules, the first rule whose pattern matches (null when none does);
 * without, the prompt's own fingerprint (every distinct prompt is its own intent).
 */
export function intentLabeller(
  rules: readonly IntentRule[] | undefined,
): (prompt: string, key: string) => string | null {
  if (!rules) return (_prompt, key) => key;
  const compiled = rules.map((r) => ({ label: r.label, re: new RegExp(r.pattern, r.flags) }));
  return (prompt) => compiled.find((r) => r.re.test(prompt))?.label ?? null;
}

export interface ResponseDriftFigures {
  /** Responses compared with the baseline's responses to the same prompt. */
  readonly pairs: number;
  readonly meanCosine: number | null;
  readonly minCosine: number | null;
  /** Pairs below `minCosine`. */
  readonly drifted: number;
  readonly driftedShare: number | null;
  /** At least `minPairs` pairs and a drifted share at or above `maxDriftedShare`. */
  readonly flagged: boolean;
}

export interface ResponseDriftOptions {
  /** Default 0.42: the spec's semantic-consistency quality gate (cross-modal test data factory). */
  readonly minCosine?: number;
  /** Default 5 %: the monitoring matrix's tolerance for intent accuracy, applied to drifted responses. */
  readonly maxDriftedShare?: number;
  readonly minPairs?: number;
}

/**
 * Response drift of a run against a baseline run: each sampled response's cosine to the
 * centroid of the baseline's responses to the same prompt (responses to prompts the baseline
 * lacks are not compared). Streaming: figures are available at any time.
 */
export class ResponseDriftTally {
  private pairs = 0;
  private sum = 0;
  private min = Infinity;
  private drifted = 0;
  private readonly minCosine: number;
  private readonly maxDriftedShare: number;
  private readonly minPairs: number;

  constructor(
    private readonly baseline: ResponseBaseline,
    options: ResponseDriftOptions = {},
  ) {
    this.minCosine = options.minCosine ?? 0.42;
    this.maxDriftedShare = options.maxDriftedShare ?? 0.05;
    this.minPairs = options.minPairs ?? 5;
  }

  /** The cosine to the baseline's responses to the same prompt, or null when it has none. */
  add(key: string, vector: ArrayLike<number>): number | null {
    const centroid = this.baseline.centroid(key);
    if (!centroid) return null;
    const c = cosineSimilarity(centroid, vector);
    this.pairs++;
    this.sum += c;
    this.min = Math.min(this.min, c);
    if (c < this.minCosine) this.drifted++;
    return c;
  }

  figures(): ResponseDriftFigures {
    const share = this.pairs ? this.drifted / this.pairs : null;
    return {
      pairs: this.pairs,
      meanCosine: this.pairs ? this.sum / this.pairs : null,
      minCosine: this.pairs ? this.min : null,
      drifted: this.drifted,
      driftedShare: share,
      flagged: share !== null && this.pairs >= this.minPairs && share >= this.maxDriftedShare,
    };
  }
}

/**
 * Keeps the sample's size but spends it where it tells most: a sampled item that is not `useful`
 * is swapped for the next unsampled useful candidate, in order. The budget (how many) stays the
 * sampler's; only the choice (which) changes. `useful` is asked at most once per item, sampled
 * ones first, and may count what it accepted (e.g. responses per prompt).
 */
export function preferUseful<T>(
  sampled: readonly T[],
  candidates: readonly T[],
  useful: (t: T) => boolean,
): T[] {
  const taken = new Set(sampled);
  const out: T[] = [];
  let next = 0;
  for (const s of sampled) {
    if (useful(s)) {
      out.push(s);
      continue;
    }
    let swap: T | undefined;
    while (swap === undefined && next < candidates.length) {
      const c = candidates[next++];
      if (!taken.has(c) && useful(c)) swap = c;
    }
    if (swap !== undefined) taken.add(swap);
    out.push(swap ?? s);
  }
  return out;
}
