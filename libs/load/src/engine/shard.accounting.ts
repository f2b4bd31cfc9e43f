import type { RequestRecord, StepTally } from '@fathom/contracts';
import type * as hdr from 'hdr-histogram-js';
import type { PromptItem } from '../dataset/prompt-item';
import type { DriverOutcome } from '../driver/request-outcome';
import { newLatencyHistogram, recordMs } from '../measure/latency-histogram.util';
import type { PhaseSlot } from '../measure/phased.recorder';
import type { RequestSample } from '../measure/window.recorder';
import type { RecordBudget } from '../measure/record-budget';
import type { ShardResult, TelemetrySink } from './run-shard';
import { tpotMs } from './tpot.util';

export interface ShardAccountingOptions {
  /** The shard's counts, shared with the run (which also sets end reason, sweep, adaptive). */
  counts: ShardResult;
  shardIndex: number;
  sink: TelemetrySink;
  /** Which finished requests are published as records (the record budget or `recordSampleRate`). */
  records: RecordBudget;
  /** Prompt text kept per record. */
  contentCapChars: number;
  /** Wall-clock ms of a performance.now() instant. */
  epochAt: (mono: number) => number;
}

/**
 * A shard's books: every finished request is counted, observed into its phase's window and,
 * sampled, published as a record. Outputs only consume (k6's rule): a sink that throws is counted
 * in `sinkErrors` and never stops the load.
 */
export class ShardAccounting {
  /** Reused for every `recorder.observe` (it reads the sample synchronously, never keeps it). */
  private readonly sample: RequestSample = {
    e2eMs: 0,
    correctedE2eMs: 0,
    ttftMs: null,
    tpotMs: null,
    chunkOffsetsMs: [],
    errorClass: null,
    inputTokens: 0,
    outputTokens: 0,
  };
  /** Latency tap for the adaptive controller (successful requests of the current interval). */
  private latencyTap: { histogram: hdr.Histogram; metric: 'ttft' | 'e2e' } | null = null;

  /** Records published since the last `takeRecordsInWindow` (the generator's health weighs them). */
  private recordsInWindow = 0;

  constructor(private readonly o: ShardAccountingOptions) {}

  /** Records published since the last call, and restarts the count (once a window). */
  takeRecordsInWindow(): number {
    const n = this.recordsInWindow;
    this.recordsInWindow = 0;
    return n;
  }

  tapLatency(metric: 'ttft' | 'e2e'): hdr.Histogram {
    const histogram = newLatencyHistogram();
    this.latencyTap = { histogram, metric };
    return histogram;
  }

  untapLatency(): void {
    this.latencyTap = null;
  }

  /** Books one finished request into the counts, its phase's window and, sampled, a record. */
  account(
    outcome: DriverOutcome,
    requestId: string,
    traceId: string,
    spanId: string,
    intendedMono: number,
    startMono: number,
    item: PromptItem,
    slot: PhaseSlot,
  ): void {
    if (outcome.gated) {
      this.o.counts.gated++;
      return;
    }
    this.o.counts.sent++;
    if (outcome.errorClass === null) this.o.counts.completed++;
    else this.o.counts.errors++;
    if (outcome.assertions)
      for (const [name, passed] of Object.entries(outcome.assertions)) {
        const tally = (this.o.counts.assertions[name] ??= { passed: 0, failed: 0 });
        if (passed) tally.passed++;
        else tally.failed++;
      }
    if (outcome.steps)
      for (const [name, run] of Object.entries(outcome.steps)) {
        const tally = (this.o.counts.steps[name] ??= emptyStepTally());
        if (!run.ran) {
          tally.skipped++;
          continue;
        }
        tally.runs++;
        if (!run.ok) tally.failed++;
        if (run.overBudget) tally.slaMisses++;
        tally.latencyMsSum += run.latencyMs;
        tally.latencyMsMax = Math.max(tally.latencyMsMax, run.latencyMs);
        if (run.firstMessageMs !== null) {
          tally.firstMessages++;
          tally.firstMessageMsSum += run.firstMessageMs;
        }
        tally.messages += run.messages;
      }
    // The actual send is when the request reached the socket (drivers that can tell say so).
    const sentMono = startMono + (outcome.sendDelayMs ?? 0);
    const correctedE2eMs = sentMono + outcome.e2eMs - intendedMono;
    const usage = outcome.usage;
    const sample = this.sample;
    sample.e2eMs = outcome.e2eMs;
    sample.correctedE2eMs = correctedE2eMs;
    sample.ttftMs = outcome.ttftMs;
    sample.chunkOffsetsMs = outcome.chunkOffsetsMs;
    sample.errorClass = outcome.errorClass;
    sample.inputTokens = usage?.promptTokens ?? outcome.inputTokensClient;
    sample.outputTokens = usage?.completionTokens ?? outcome.outputTokensClient;
    sample.tpotMs = tpotMs(outcome.e2eMs, outcome.ttftMs, sample.outputTokens);
    slot.recorder.observe(sample);
    const tap = this.latencyTap;
    if (tap && outcome.errorClass === null) {
      const metric = tap.metric === 'ttft' ? outcome.ttftMs : outcome.e2eMs;
      if (metric !== null) recordMs(tap.histogram, metric);
    }
    if (this.o.records.take(sentMono + outcome.e2eMs)) {
      this.o.counts.recordsSampled++;
      this.recordsInWindow++;
      const record: RequestRecord = {
        requestId,
        traceId,
        phase: slot.ref,
        shard: this.o.shardIndex,
        scheduledAt: this.o.epochAt(intendedMono),
        startedAt: this.o.epochAt(sentMono),
        ttftMs: outcome.ttftMs,
        e2eMs: outcome.e2eMs,
        tpotMs: sample.tpotMs,
        correctedE2eMs: Math.max(0, correctedE2eMs),
        chunkOffsetsMs: outcome.chunkOffsetsMs,
        status: outcome.status,
        errorClass: outcome.errorClass,
        inputTokensClient: outcome.inputTokensClient,
        outputTokensClient: outcome.outputTokensClient,
        usage,
        content: outcome.content,
        // The semantic-monitor judges prompt explosion (nesting depth, token surge) from this.
        prompt: item.text.slice(0, this.o.contentCapChars),
        finishReason: outcome.finishReason,
        spanId,
      };
      // Optional fields set only when present (no object spreads on the hot path).
      if (outcome.errorMessage !== undefined) record.errorMessage = outcome.errorMessage.slice(0, 1000);
      if (outcome.serverRequestId !== undefined)
        record.serverRequestId = outcome.serverRequestId.slice(0, 200);
      if (outcome.retryAfterS !== undefined) record.retryAfterS = outcome.retryAfterS;
      if (outcome.logprobs !== undefined) record.logprobs = outcome.logprobs;
      if (outcome.toolCalls !== undefined) record.toolCalls = outcome.toolCalls;
      if (outcome.retrievedDocuments !== undefined) record.retrievedDocuments = outcome.retrievedDocuments;
      if (outcome.agentLoop !== undefined) record.agentLoop = outcome.agentLoop;
      try {
        this.o.sink.record(record);
      } catch {
        // See emitWindow: outputs never stop the load.
        this.o.counts.sinkErrors++;
      }
    }
  }
}

function emptyStepTally(): StepTally {
  return {
    runs: 0,
    failed: 0,
    skipped: 0,
    slaMisses: 0,
    latencyMsSum: 0,
    latencyMsMax: 0,
    firstMessages: 0,
    firstMessageMsSum: 0,
    messages: 0,
  };
}
