import { SeededRandom } from '@fathom/load';
import type { RecordDigest } from '../evidence/record-digest';
import { addToolCalls, type ToolCallCounts } from '../evidence/tool-drift';
import {
  isGoodRecord,
  type Objective,
  type RecordCounts,
  type RecordObjective,
} from '../objectives/objective.model';
import {
  addTokenAgreement,
  DEFAULT_VALIDITY_OPTIONS,
  type TokenAgreement,
  type ValidityOptions,
} from '../validity/measurement-validity';
import { SLOWEST_REQUESTS_LISTED } from './slowest-requests';

/**
 * Digests a report holds at most (~0.5 KB of heap each: ~25 MB; 500 s of one shard at its default
 * budget of 100 records/s). Past it only the records table is drawn from a sample.
 */
export const MAX_REPORT_DIGESTS = 50_000;
/** The sample's seed: a run read back twice gives the same sample. */
export const REPORT_DIGEST_SAMPLE_SEED = 14;

/** The records table of a run over the cap was drawn from this seeded uniform sample (Algorithm R). */
export interface DigestSample {
  /** Digests in the sample (the cap). */
  readonly kept: number;
  /** Digests of the run, all folded into the exact figures. */
  readonly of: number;
  readonly seed: number;
}

export interface ReportDigestOptions {
  /** Every tier's objectives: the record objectives among them are counted over the whole run. */
  readonly objectives: readonly Objective[];
  /** A gap between tokens at least this long (ms) is a stall (`semantic.stalledResponses`). */
  readonly stallMs: number;
  /** Start of the whole-run span (exclusive): a digest that ended at or before it counts in no objective. */
  readonly spanFromMs: number;
  /** Digests held at most; default `MAX_REPORT_DIGESTS`. */
  readonly maxDigests?: number;
  /** Request ids whose end `requestEnds` indexes at most; default `MAX_REPORT_DIGESTS`. */
  readonly maxRequestEnds?: number;
  readonly validity?: ValidityOptions;
}

/**
 * When requests ended, by id (the latest digest of an id), for placing token stats stored without
 * their own end (`TokenStatsEntry.endedAt`). Bounded: the first ids folded, up to the cap.
 */
export interface RequestEndIndex {
  readonly ends: ReadonlyMap<string, number>;
  /** Every digest's id is in `ends`: an id not there had no digest. */
  readonly complete: boolean;
}

/** What a report reads of a run's digests, whatever their number. */
export interface ReportDigestFigures {
  /** Digests folded. */
  readonly total: number;
  /** Every digest (none sampled away), or the sample; by end time, then fold order. */
  readonly held: readonly RecordDigest[];
  /** Null: `held` is every digest. */
  readonly sample: DigestSample | null;
  /** The stall bound `semantic.stalledResponses` was counted with. */
  readonly stallMs: number;
  /** Earliest start and latest end of any digest: the run's bounds where windows do not set them. */
  readonly startedAtMin: number | null;
  readonly endedAtMax: number | null;
  /** The slowest by E2E (finite), slowest first; ties by end time, then fold order. */
  readonly slowest: readonly RecordDigest[];
  readonly semantic: {
    readonly judgedResponses: number;
    readonly riskyResponses: number;
    readonly stalledResponses: number;
    readonly tokenCountMismatches: number;
  };
  readonly tokenAgreement: TokenAgreement;
  readonly toolCalls: ToolCallCounts;
  /** Output tokens (finite, >= 0) -> responses with that many. */
  readonly outputTokens: ReadonlyMap<number, number>;
  /** Where token stats without their own end are placed. The accumulator's own map, not a copy. */
  readonly requestEnds: RequestEndIndex;
  /** The record objectives' counts over the whole-run span. */
  readonly wholeRun: RecordCounts;
}

/**
 * Folds a run's digests, fed in stored order a page at a time, into what its report reads:
 *
 * - counts and sums (objectives, validity, semantic counts, tool rates, output tokens) exact;
 * - the slowest `SLOWEST_REQUESTS_LISTED` exact (a bounded top list);
 * - the digests themselves up to `maxDigests`, then a seeded uniform reservoir of that many: only
 *   the records table is drawn from it, labelled by `sample`.
 *
 * Memory: at most `maxDigests` digests, counters, one entry per distinct output-token count, and
 * at most `maxRequestEnds` request ends.
 */
export class ReportDigestsAccumulator {
  private total = 0;
  private readonly held: RecordDigest[] = [];
  /** Fold order of each held digest (ties in end time keep it). */
  private readonly heldOrder: number[] = [];
  private readonly random = new SeededRandom(REPORT_DIGEST_SAMPLE_SEED);
  private readonly maxDigests: number;
  private startedAtMin: number | null = null;
  private endedAtMax: number | null = null;
  private readonly slowest: { d: RecordDigest; order: number }[] = [];
  private readonly semantic = {
    judgedResponses: 0,
    riskyResponses: 0,
    stalledResponses: 0,
    tokenCountMismatches: 0,
  };
  private readonly tokenAgreement: TokenAgreement = { counted: 0, disagree: 0 };
  private readonly toolCalls: ToolCallCounts = new Map();
  private readonly outputTokens = new Map<number, number>();
  private readonly requestEnds = new Map<string, number>();
  private readonly maxRequestEnds: number;
  /** A digest's id did not fit in `requestEnds`. */
  private requestEndsFull = false;
  /** Per distinct record objective (`recordObjectiveKey`): judged and good in the whole-run span. */
  private readonly goodput = new Map<string, { objective: RecordObjective; judged: number; good: number }>();
  private readonly agent = { calls: 0, ok: 0 };

  constructor(private readonly options: ReportDigestOptions) {
    this.maxDigests = options.maxDigests ?? MAX_REPORT_DIGESTS;
    if (!(this.maxDigests >= 1))
      throw new RangeError(`maxDigests must be at least 1, got ${String(options.maxDigests)}`);
    this.maxRequestEnds = options.maxRequestEnds ?? MAX_REPORT_DIGESTS;
    for (const o of options.objectives)
      if (o.kind === 'goodput' || o.kind === 'semantic-goodput')
        this.goodput.set(recordObjectiveKey(o), { objective: o, judged: 0, good: 0 });
  }

  addDigests(digests: readonly RecordDigest[]): void {
    for (const d of digests) this.add(d);
  }

  /** Digests held now: never more than `maxDigests`. */
  get heldCount(): number {
    return this.held.length;
  }

  figures(): ReportDigestFigures {
    const byEnd = this.held.map((d, i) => ({ d, order: this.heldOrder[i] }));
    byEnd.sort((a, b) => a.d.at - b.d.at || a.order - b.order);
    const goodput = new Map([...this.goodput].map(([key, n]) => [key, { judged: n.judged, good: n.good }]));
    const agent = { ...this.agent };
    return {
      total: this.total,
      held: byEnd.map((h) => h.d),
      sample:
        this.total > this.maxDigests
          ? { kept: this.held.length, of: this.total, seed: REPORT_DIGEST_SAMPLE_SEED }
          : null,
      stallMs: this.options.stallMs,
      startedAtMin: this.startedAtMin,
      endedAtMax: this.endedAtMax,
      slowest: this.slowest.map((s) => s.d),
      semantic: { ...this.semantic },
      tokenAgreement: { ...this.tokenAgreement },
      toolCalls: new Map([...this.toolCalls].map(([key, n]) => [key, { ...n }])),
      outputTokens: new Map(this.outputTokens),
      requestEnds: { ends: this.requestEnds, complete: !this.requestEndsFull },
      wholeRun: {
        goodput: (o) => {
          const counts = goodput.get(recordObjectiveKey(o));
          if (!counts) throw new RangeError(`objective ${o.kind} was not among the folded tiers' objectives`);
          return { ...counts };
        },
        agentCalls: () => ({ ...agent }),
      },
    };
  }

  private add(d: RecordDigest): void {
    const order = this.total++;
    this.hold(d, order);
    this.startedAtMin = this.startedAtMin === null ? d.startedAt : Math.min(this.startedAtMin, d.startedAt);
    this.endedAtMax = this.endedAtMax === null ? d.at : Math.max(this.endedAtMax, d.at);
    if (Number.isFinite(d.e2eMs)) this.rankSlowest(d, order);
    if (d.riskSegments !== null) this.semantic.judgedResponses++;
    if ((d.riskSegments ?? 0) > 0) this.semantic.riskyResponses++;
    if ((d.gapMaxMs ?? 0) >= this.options.stallMs) this.semantic.stalledResponses++;
    if ((d.tokenMismatch ?? 0) !== 0) this.semantic.tokenCountMismatches++;
    addTokenAgreement(this.tokenAgreement, d, this.options.validity ?? DEFAULT_VALIDITY_OPTIONS);
    addToolCalls(this.toolCalls, d);
    if (Number.isFinite(d.outputTokens) && d.outputTokens >= 0)
      this.outputTokens.set(d.outputTokens, (this.outputTokens.get(d.outputTokens) ?? 0) + 1);
    if (d.requestId) this.indexEnd(d.requestId, d.at);
    if (d.at <= this.options.spanFromMs) return;
    for (const n of this.goodput.values()) {
      n.judged++;
      if (isGoodRecord(n.objective, d)) n.good++;
    }
    for (const c of d.calls) {
      if (c.layer !== 'agent') continue;
      this.agent.calls++;
      if (c.ok) this.agent.ok++;
    }
  }

  private indexEnd(requestId: string, at: number): void {
    const known = this.requestEnds.get(requestId);
    if (known !== undefined) this.requestEnds.set(requestId, Math.max(at, known));
    else if (this.requestEnds.size < this.maxRequestEnds) this.requestEnds.set(requestId, at);
    else this.requestEndsFull = true;
  }

  /** Every digest up to the cap; then each one replaces a held one with probability cap / seen. */
  private hold(d: RecordDigest, order: number): void {
    if (this.held.length < this.maxDigests) {
      this.held.push(d);
      this.heldOrder.push(order);
      return;
    }
    const slot = this.random.int(order + 1);
    if (slot >= this.maxDigests) return;
    this.held[slot] = d;
    this.heldOrder[slot] = order;
  }

  private rankSlowest(d: RecordDigest, order: number): void {
    const before = (a: { d: RecordDigest; order: number }) =>
      d.e2eMs > a.d.e2eMs ||
      (d.e2eMs === a.d.e2eMs && (d.at < a.d.at || (d.at === a.d.at && order < a.order)));
    let at = this.slowest.length;
    while (at > 0 && before(this.slowest[at - 1])) at--;
    if (at >= SLOWEST_REQUESTS_LISTED) return;
    this.slowest.splice(at, 0, { d, order });
    if (this.slowest.length > SLOWEST_REQUESTS_LISTED) this.slowest.pop();
  }
}

/** Folds a list of digests at once (a report built from a timeline that holds them all). */
export function foldReportDigests(
  digests: readonly RecordDigest[],
  options: ReportDigestOptions,
): ReportDigestFigures {
  const accumulator = new ReportDigestsAccumulator(options);
  accumulator.addDigests(digests);
  return accumulator.figures();
}

/** Record objectives that judge alike share their counts. */
function recordObjectiveKey(o: RecordObjective): string {
  return `${o.kind}/${o.e2eMaxMs ?? ''}/${o.kind === 'goodput' ? (o.ttftMaxMs ?? '') : ''}`;
}
