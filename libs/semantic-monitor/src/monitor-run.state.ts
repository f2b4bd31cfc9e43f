import type { RequestRecord, RunShardCommand } from '@fathom/contracts';
import {
  DEFAULT_REQUEST_E2E_BUDGET_MS,
  GoodputLedger,
  ResponseAssessor,
  SampledEmbeddingDrift,
  TokenSampleBudget,
  type RequestLatencySlo,
} from '@fathom/semantic';
import type { BaselineDriftWatch } from './baseline-drift.watch';
import { RagMismatchWatch, type RagMismatchDeps } from './rag-mismatch.watch';

/**
 * What the monitor knows of one run between its first message and its report: the judges and
 * watches fed by its records, its shards' ends, and whether its goodput went out. Invariants:
 * goodput is published once (`goodputPublished`); it is due once every shard has ended
 * (`allShardsEnded`) and the records they published were judged, or at the settle timer.
 */
export class MonitorRun {
  slo: RequestLatencySlo | null = null;
  shardCount: number | null = null;
  /** Shard index -> records it published. */
  readonly endedShards = new Map<number, number>();
  readonly assessor = new ResponseAssessor();
  /** Which responses keep their per-token rows for the report's heat map. */
  readonly tokenSamples = new TokenSampleBudget();
  readonly ledger = new GoodputLedger();
  readonly drift = new SampledEmbeddingDrift();
  /** Against a baseline run (campaign spec `semantic.baseline`); null when not asked for. */
  baseline: BaselineDriftWatch | null = null;
  /** RAG query/document KL on the embedded retrieve/rerank records. */
  readonly ragMismatch: RagMismatchWatch;
  goodputPublished = false;
  settleTimer: NodeJS.Timeout | null = null;
  private firstStartedAt: number | null = null;
  private lastEndedAt: number | null = null;

  constructor(
    readonly campaignId: string,
    readonly runId: string,
    rag: RagMismatchDeps,
  ) {
    this.ragMismatch = new RagMismatchWatch(campaignId, runId, rag);
  }

  /** Takes the shard count and per-request latency budgets from a shard's command. */
  declare(command: RunShardCommand): void {
    this.shardCount = command.shard.count;
    const slo = command.spec.slo;
    // Per-request budgets: the run's P99 objectives applied to each request; SLO-0's 800 ms when none.
    this.slo =
      slo.p99Ms === undefined && slo.ttftP99Ms === undefined
        ? { e2eMs: DEFAULT_REQUEST_E2E_BUDGET_MS }
        : { e2eMs: slo.p99Ms, ttftMs: slo.ttftP99Ms };
  }

  shardEnded(shard: { index: number; count: number }, recordsPublished: number): void {
    this.shardCount ??= shard.count;
    this.endedShards.set(shard.index, recordsPublished);
  }

  allShardsEnded(): boolean {
    return this.shardCount !== null && this.endedShards.size >= this.shardCount;
  }

  /** Records the ended shards published. */
  expectedRecords(): number {
    return [...this.endedShards.values()].reduce((a, b) => a + b, 0);
  }

  /** Widens the run's measured span to a judged record's. */
  observeSpan(record: RequestRecord): void {
    this.firstStartedAt = Math.min(this.firstStartedAt ?? Infinity, record.startedAt);
    this.lastEndedAt = Math.max(this.lastEndedAt ?? 0, record.startedAt + record.e2eMs);
  }

  /** From the first record's start to the last one's end (s); undefined without a span. */
  durationS(): number | undefined {
    return this.firstStartedAt !== null && this.lastEndedAt !== null && this.lastEndedAt > this.firstStartedAt
      ? (this.lastEndedAt - this.firstStartedAt) / 1000
      : undefined;
  }

  cancelSettle(): void {
    if (this.settleTimer) clearTimeout(this.settleTimer);
  }
}
