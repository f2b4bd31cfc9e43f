import { envelope, Detectors, type DetectorSignal, type RequestRecord } from '@fathom/contracts';
import { embeddingKlDivergence } from '@fathom/semantic';

/**
 * Mismatch threshold on KL(softmax(query) || softmax(document)) in nats, times the embedding's
 * dimensions. The spec names the measure but no threshold for it (its one KL bound, <= 0.15, is
 * for adversarial prompt perturbations, another thing), so this is derived from the simulated
 * target: support queries against its retrieve layer (top 3), embedded with USE-lite (512-d).
 * Relevant answers measured 0.50-0.93e-3 nats as plain answers, 0.18-0.38e-3 as FAQ entries that
 * restate the question (rag-mismatch.int-spec.ts); documents of another topic 1.49-2.18e-3. The
 * threshold sits between, at 1.17e-3 for 512-d. A wrong answer of the same domain (the sim's
 * bag-of-words retrieval returns some) measured 0.94-1.67e-3: it straddles the threshold. For
 * unit-norm embeddings with small components KL ~ (1 - cosine) / dimensions, so the threshold is
 * kept as a product with the dimensions and scaled for other embedders (an approximation,
 * measured on USE-lite only).
 */
export const RAG_MISMATCH_KL_TIMES_DIMENSIONS = 0.6;

export function ragMismatchKlThreshold(dimensions: number): number {
  return RAG_MISMATCH_KL_TIMES_DIMENSIONS / Math.max(1, dimensions);
}

/** Pairs before a verdict (our choice: 4 retrievals of 3 documents); fewer say "no verdict". */
export const RAG_MISMATCH_MIN_PAIRS = 12;
/**
 * Alarm when more than this share of query/document pairs is over the threshold, i.e. the median
 * retrieved document does not match its query (our choice: one odd document in a top 3 is usual,
 * most of them off is the recall avalanche the spec describes).
 */
export const RAG_MISMATCH_ALARM_SHARE = 0.5;
/** KL values kept per run for the P95 (a uniform reservoir beyond it). */
const RESERVOIR_SIZE = 4096;
/** Progress signals while the run lasts, at most this often (as the baseline watch does). */
const PROGRESS_EVERY_MS = 2000;

/**
 * The texts a RAG record is judged on: its query (`prompt`) and retrieved documents, query first;
 * null when the record has no query, no documents, or failed.
 */
export function ragTexts(record: RequestRecord): string[] | null {
  const documents = record.retrievedDocuments;
  if (record.errorClass !== null || !record.prompt || documents === undefined || documents.length === 0)
    return null;
  return [record.prompt, ...documents];
}

/**
 * The embedding sample budget is counted in texts: a RAG record costs its query and documents
 * (up to 4 texts), a response one. `admit` is asked for each record the adaptive sampler took;
 * after a RAG record is admitted, the sampler's next takes (of any record) pay for its extra
 * texts and are refused, so the texts embedded stay about the sampler's rate times the records.
 * One per service, like the sampler.
 */
export class RagEmbeddingBudget {
  private owed = 0;

  admit(record: RequestRecord): boolean {
    if (this.owed > 0) {
      this.owed--;
      return false;
    }
    const texts = ragTexts(record);
    this.owed = texts === null ? 0 : texts.length - 1;
    return true;
  }
}

/** What one embedding batch holds: response texts and RAG query/document texts, side by side. */
export interface EmbeddingPlan {
  readonly texts: string[];
  /** Records embedded by their response `content`, and where each vector is. */
  readonly responses: { record: RequestRecord; at: number }[];
  /** RAG records: the query's vector at `at`, its documents' after it. */
  readonly retrievals: { record: RequestRecord; at: number; documents: number }[];
}

/** One batch for the sample: a RAG record with documents embeds its query and documents, any other its content. */
export function planEmbeddings(records: readonly RequestRecord[], maxChars = 2000): EmbeddingPlan {
  const plan: EmbeddingPlan = { texts: [], responses: [], retrievals: [] };
  for (const record of records) {
    const rag = ragTexts(record);
    if (rag === null) {
      plan.responses.push({ record, at: plan.texts.length });
      plan.texts.push(record.content.slice(0, maxChars));
    } else {
      plan.retrievals.push({ record, at: plan.texts.length, documents: rag.length - 1 });
      for (const text of rag) plan.texts.push(text.slice(0, maxChars));
    }
  }
  return plan;
}

export interface RagMismatchFigures {
  pairs: number;
  records: number;
  meanKl: number | null;
  p95Kl: number | null;
  maxKl: number | null;
  overThreshold: number;
  overThresholdShare: number | null;
  thresholdKl: number;
}

/** Per-run KL figures over query/document pairs; memory bounded by the P95 reservoir. */
export class RagMismatchTally {
  private pairs = 0;
  private records = 0;
  private sum = 0;
  private max = 0;
  private over = 0;
  private readonly reservoir: number[] = [];
  /** A fixed-seed LCG: the same pairs keep the same reservoir (tests, replays). */
  private seed = 0x9e3779b9;

  constructor(readonly thresholdKl: number) {}

  /** KL of the query against each document, in nats, in the documents' order. */
  add(query: ArrayLike<number>, documents: readonly ArrayLike<number>[]): number[] {
    const out = documents.map((document) => embeddingKlDivergence(query, document));
    if (out.length > 0) this.records++;
    for (const kl of out) {
      this.pairs++;
      this.sum += kl;
      this.max = Math.max(this.max, kl);
      if (kl > this.thresholdKl) this.over++;
      if (this.reservoir.length < RESERVOIR_SIZE) this.reservoir.push(kl);
      else {
        this.seed = (Math.imul(this.seed, 1664525) + 1013904223) >>> 0;
        const slot = this.seed % this.pairs;
        if (slot < RESERVOIR_SIZE) this.reservoir[slot] = kl;
      }
    }
    return out;
  }

  figures(): RagMismatchFigures {
    const n = this.pairs;
    return {
      pairs: n,
      records: this.records,
      meanKl: n === 0 ? null : this.sum / n,
      p95Kl: n === 0 ? null : percentile(this.reservoir, 0.95),
      maxKl: n === 0 ? null : this.max,
      overThreshold: this.over,
      overThresholdShare: n === 0 ? null : this.over / n,
      thresholdKl: this.thresholdKl,
    };
  }

  /** `mismatched` when enough pairs are in and more than the alarm share is over the threshold. */
  verdict(): 'no-verdict' | 'matched' | 'mismatched' {
    if (this.pairs < RAG_MISMATCH_MIN_PAIRS) return 'no-verdict';
    return this.over / this.pairs > RAG_MISMATCH_ALARM_SHARE ? 'mismatched' : 'matched';
  }
}

/** Nearest-rank percentile. */
function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export interface RagMismatchDeps {
  readonly publish: (signal: DetectorSignal) => Promise<void>;
  readonly now?: () => number;
}

/**
 * One run's RAG query/document mismatch (spec, anomaly class 2): for each sampled retrieve or
 * rerank record, KL(softmax(query) || softmax(document)) against each of its top documents, on
 * the monitor's embedding sample. Made on the first embedded RAG record, so runs without one
 * publish nothing. A `rag-mismatch` signal goes out at most every 2 s while the run lasts, at
 * once when the verdict changes, and once at the end; `warning` when the run's pairs are mostly
 * over the threshold.
 */
export class RagMismatchWatch {
  private tally: RagMismatchTally | null = null;
  private readonly now: () => number;
  private lastProgressAt = 0;
  private progressSeq = 0;
  private finished = false;

  constructor(
    private readonly campaignId: string,
    private readonly runId: string,
    private readonly deps: RagMismatchDeps,
  ) {
    this.now = deps.now ?? Date.now;
  }

  /** The retrievals of one embedding batch and its vectors (`plan.texts` order). */
  async observe(
    retrievals: EmbeddingPlan['retrievals'],
    vectors: readonly ArrayLike<number>[],
    dimensions: number,
  ): Promise<void> {
    if (this.finished || retrievals.length === 0) return;
    const tally = (this.tally ??= new RagMismatchTally(ragMismatchKlThreshold(dimensions)));
    const before = tally.verdict();
    for (const { at, documents } of retrievals)
      tally.add(vectors[at], vectors.slice(at + 1, at + 1 + documents));
    const now = this.now();
    // A new verdict goes out at once (a short run would otherwise see it only after its report).
    if (tally.verdict() === before && now - this.lastProgressAt < PROGRESS_EVERY_MS) return;
    this.lastProgressAt = now;
    await this.publish(`progress-${this.progressSeq++}`, false);
  }

  /** The final signal, once the embedding in flight (`settled`) is in; nothing when no RAG record was embedded. */
  async finish(complete: boolean, settled: Promise<unknown>): Promise<void> {
    if (this.finished) return;
    await settled.catch(() => undefined);
    this.finished = true;
    if (this.tally === null) return;
    await this.publish('final', complete);
  }

  private async publish(seq: string, complete: boolean): Promise<void> {
    const tally = this.tally;
    if (tally === null) return;
    const f = tally.figures();
    const verdict = tally.verdict();
    const figures: Record<string, number> = {
      pairs: f.pairs,
      records: f.records,
      overThreshold: f.overThreshold,
      thresholdKl: f.thresholdKl,
      alarmShare: RAG_MISMATCH_ALARM_SHARE,
      minPairs: RAG_MISMATCH_MIN_PAIRS,
      mismatched: verdict === 'mismatched' ? 1 : 0,
    };
    if (f.meanKl !== null) figures.meanKl = f.meanKl;
    if (f.p95Kl !== null) figures.p95Kl = f.p95Kl;
    if (f.maxKl !== null) figures.maxKl = f.maxKl;
    if (f.overThresholdShare !== null) figures.overThresholdShare = f.overThresholdShare;
    if (seq === 'final') figures.complete = complete ? 1 : 0;
    const kl = (v: number | null) => (v === null ? 'n/a' : v.toExponential(2));
    const share = f.overThresholdShare === null ? 'n/a' : `${(f.overThresholdShare * 100).toFixed(0)} %`;
    const head =
      verdict === 'no-verdict'
        ? `no verdict yet: ${f.pairs} of ${RAG_MISMATCH_MIN_PAIRS} query/document pairs`
        : verdict === 'mismatched'
          ? 'RAG query/document mismatch: retrieved documents do not match their queries'
          : 'retrieved documents match their queries';
    await this.deps.publish({
      ...envelope(this.campaignId, this.runId),
      id: `${this.runId}/${Detectors.ragMismatch}/${seq}`,
      kind: 'detector',
      detector: Detectors.ragMismatch,
      requestId: null,
      severity: verdict === 'mismatched' ? 'warning' : 'info',
      message: `${head} (KL of softmaxed embeddings, nats: mean ${kl(f.meanKl)}, P95 ${kl(f.p95Kl)}; ${share} of ${f.pairs} pairs over ${kl(f.thresholdKl)})`,
      figures,
    });
  }
}
