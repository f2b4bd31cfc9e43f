import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { z } from 'zod';
import {
  InjectBus,
  buildDeadLetter,
  consume,
  subscribeAll,
  type Bus,
  type MessageContext,
  type Subscription,
} from '@fathom/bus';
import {
  RequestRecordSchema,
  Topics,
  envelope,
  type DetectorSignal,
  type RequestRecord,
  type RequestTelemetry,
  type RunLifecycle,
  type RunReport,
  type RunShardCommand,
  type SemanticSignal,
  type TokenSample,
  type TokenStatsEntry,
  Detectors,
  requestTelemetryEnvelopeTopic,
  type RequestTelemetryEnvelope,
  type DetectorName,
} from '@fathom/contracts';
import {
  DEFAULT_HALLUCINATION_RISK,
  EPISODE_WATCHES,
  rerankerBusyOf,
  type EpisodeChange,
  type ResponseAssessment,
} from '@fathom/semantic';
import { isStaleShardCommand } from '@fathom/contracts';
import { consumerGroup } from '@fathom/contracts';
import { tokenStats } from './token-stats.util';
import { ToolContractWatch } from './tool-contract.watch';
import { LlmMonitorWatch } from './llm-monitor.watch';
import { BaselineDriftService } from './baseline-drift.watch';
import { EmbeddingSampler } from './embedding.sampler';
import { MonitorRun } from './monitor-run.state';
import { SEMANTIC_MONITOR_SETTINGS, type SemanticMonitorSettings } from './semantic-monitor.settings';
import { TimeSliceClock } from './time-slice.util';

/**
 * Most synchronous work per macrotask (validation, assessment, signal encoding), ms. In the
 * embedded runtime the load-generator stamps token arrivals on this same loop; a 2 ms slice
 * bounds the delay the monitor adds to any of them. Our choice, about one SSE token gap at
 * 500 tokens/s.
 */
export const MONITOR_SLICE_BUDGET_MS = 2;

/**
 * Reads request telemetry and judges every response while the load is on: token-level stats,
 * hallucination risk from the logprobs (entropy for every token), prompt explosion (when the
 * record carries the prompt), text validity and the latency SLO, semantic anomalies in the
 * response and error texts (the LLM monitor: rules, then a small ONNX model), then per run the semantic
 * goodput once every shard's records are in. Embeddings run on a sample whose rate follows the
 * host's CPU left (AIMD), off the hot path: at most one embedding batch is in flight and a
 * sample that finds it busy is skipped, never queued.
 *
 * The event loop is shared (in the embedded runtime, with the load-generator's token timing),
 * so nothing here holds it for long: records are validated and assessed in slices of at most
 * `MONITOR_SLICE_BUDGET_MS`, and the embedding model runs in a worker thread (`WorkerEmbedder`),
 * started with the first run this service sees, so the service itself starts at once and an
 * idle one loads no model. A worker that dies is reported (monitor-fault) and restarted with
 * backoff; samples meanwhile go without embeddings.
 *
 * This class wires and delegates: per-run state is `MonitorRun`, the embedding sample and its
 * worker are `EmbeddingSampler`; judging and signal encoding stay here.
 */
@Injectable()
export class SemanticMonitorService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(SemanticMonitorService.name);
  private readonly subscriptions: Subscription[] = [];
  private readonly runs = new Map<string, MonitorRun>();
  /** Tool schema drift: observed tool answers against the campaign's declared contracts. */
  private readonly toolContracts = new ToolContractWatch();
  /** LLM-as-a-monitor: response and error fragments, rules then the anomaly model. */
  private readonly llmMonitor: LlmMonitorWatch;
  private readonly sampler: EmbeddingSampler;
  private readonly clock = new TimeSliceClock(MONITOR_SLICE_BUDGET_MS);
  /** After the last shard ends, how long to wait for its records before publishing goodput anyway. */
  private readonly settleMs: number;

  constructor(
    @InjectBus() private readonly bus: Bus,
    private readonly baselines: BaselineDriftService,
    @Inject(SEMANTIC_MONITOR_SETTINGS) settings: SemanticMonitorSettings,
  ) {
    this.sampler = new EmbeddingSampler({
      embedder: settings.FATHOM_SEMANTIC_EMBEDDER,
      minSampleRate: settings.FATHOM_SEMANTIC_MIN_SAMPLE_RATE,
      onFault: (message, restartInMs, fault) => void this.onEmbedderFault(message, restartInMs, fault),
    });
    this.settleMs = settings.FATHOM_SEMANTIC_SETTLE_MS;
    this.llmMonitor = new LlmMonitorWatch(settings.FATHOM_LLM_MONITOR_MODEL, (m) => this.logger.warn(m));
  }

  async onModuleInit(): Promise<void> {
    this.subscriptions.push(
      ...(await subscribeAll(this.bus, 'semantic-monitor', [
        consume(Topics.runShard, (c) => this.onShard(c), { fromBeginning: true }),
        consume(Topics.runLifecycle, (e) => this.onLifecycle(e)),
        consume(Topics.runReport, (r) => this.onReport(r)),
        consume(requestTelemetryEnvelopeTopic, (batch, context) => this.onBatch(batch, context)),
      ])),
    );
    this.sampler.start();
  }

  async onApplicationShutdown(): Promise<void> {
    for (const run of this.runs.values()) run.cancelSettle();
    await Promise.all(this.subscriptions.map((s) => s.close()));
    await this.sampler.close();
    await this.llmMonitor.close();
  }

  private run(campaignId: string, runId: string): MonitorRun {
    let run = this.runs.get(runId);
    if (!run) {
      run = new MonitorRun(campaignId, runId, {
        publish: (signal) => this.bus.publish(Topics.semanticSignal, signal),
      });
      this.runs.set(runId, run);
      this.sampler.startModel();
    }
    return run;
  }

  private onShard(command: RunShardCommand): void {
    if (isStaleShardCommand(command)) return;
    const run = this.run(command.campaignId, command.runId);
    run.declare(command);
    this.toolContracts.declare(command.campaignId, command.runId, command.spec);
    run.baseline ??= this.baselines.watch(command);
  }

  private async onLifecycle(event: RunLifecycle): Promise<void> {
    if (event.phase === 'shard-started') return;
    const run = this.run(event.campaignId, event.runId);
    run.shardEnded(event.shard, event.counts.recordsPublished);
    await this.maybePublishGoodput(event.runId, run, false);
  }

  private onReport(report: RunReport): void {
    this.runs.get(report.runId)?.cancelSettle();
    this.runs.delete(report.runId);
    this.toolContracts.forget(report.runId);
    this.llmMonitor.forget(report.runId);
  }

  private async onBatch(envelopeOnly: RequestTelemetryEnvelope, context: MessageContext): Promise<void> {
    const records: RequestRecord[] = [];
    for (let i = 0; i < envelopeOnly.records.length; i++) {
      if (this.clock.due()) await this.clock.yield();
      const checked = RequestRecordSchema.safeParse(envelopeOnly.records[i]);
      if (!checked.success) {
        await this.deadLetter(envelopeOnly, context, `records[${i}]: ${z.prettifyError(checked.error)}`);
        return;
      }
      records.push(checked.data);
    }
    const batch: RequestTelemetry = { ...envelopeOnly, records };
    const run = this.run(batch.campaignId, batch.runId);
    // Before the ledger counts these records: goodput (with the monitor's figures) waits for it.
    const anomalies = await this.llmMonitor.observe(batch, this.clock);
    if (anomalies.length > 0) await this.bus.publishMany(Topics.semanticSignal, anomalies);
    let signals: SemanticSignal[] = [];
    const stats: TokenStatsEntry[] = [];
    // A redelivered batch is judged and signalled again (downstream ids dedupe it), counted once.
    const counted = run.ledger.admitBatch(batch.id);
    let toEmbed: RequestRecord[] = [];
    for (const record of records) {
      if (this.clock.due()) {
        // The slice's signals go out before the yield, in record order.
        if (signals.length > 0) await this.bus.publishMany(Topics.semanticSignal, signals);
        signals = [];
        await this.clock.yield();
      }
      const id = `${batch.id}/${record.requestId}`;
      try {
        const assessment = run.assessor.assess(record, run.slo);
        const sample = run.tokenSamples.take(assessment.rows, assessment.riskSegments);
        stats.push(this.tokenStatsEntry(record, assessment, sample));
        signals.push(...this.detectorSignals(batch, id, record, assessment));
        signals.push(...this.toolContracts.observe(batch, record));
        signals.push(...this.episodeSignals(batch, id, run, record, assessment));
        if (counted)
          run.ledger.add({
            requestId: record.requestId,
            latencySloMet:
              assessment.latencySloMet ??
              (record.errorClass === null && record.status >= 200 && record.status < 300),
            semanticChecks: assessment.checks,
          });
        run.observeSpan(record);
        if (
          assessment.status === 'ok' ||
          assessment.status === 'no-logprobs' ||
          assessment.status === 'no-top-logprobs'
        ) {
          if (this.sampler.admit(record)) toEmbed.push(record);
        }
      } catch (error) {
        // A record the zod schema let through but the monitor cannot judge: classified, not a crash.
        signals.push(
          this.detector(
            batch,
            `${id}/fault`,
            record.requestId,
            Detectors.monitorFault,
            'warning',
            `could not assess response: ${errorText(error)}`,
            {},
          ),
        );
      }
    }
    if (stats.length > 0) {
      // One signal for the batch's token stats; its id derives from the batch's, so a
      // redelivered batch stays idempotent downstream.
      signals.push({
        ...envelope(batch.campaignId, batch.runId),
        id: `${batch.id}/stats`,
        kind: 'token-stats-batch',
        stats,
      });
    }
    if (signals.length > 0) await this.bus.publishMany(Topics.semanticSignal, signals);
    if (run.baseline) toEmbed = run.baseline.prefer(toEmbed, batch.records);
    if (toEmbed.length > 0) this.sampler.embed(run, toEmbed);
    await this.maybePublishGoodput(batch.runId, run, false);
  }

  /** A message with a record that fails the record schema: dead-lettered whole, as the bus does with an invalid message. */
  private async deadLetter(
    event: RequestTelemetryEnvelope,
    context: MessageContext,
    error: string,
  ): Promise<void> {
    this.logger.warn(`dead-lettering telemetry ${event.id} of run ${event.runId}: ${error}`);
    await this.bus.publish(
      Topics.deadLetter,
      buildDeadLetter({
        message: {
          topic: context.topic,
          key: context.key,
          partition: context.partition,
          offset: context.offset,
          headers: context.headers,
          // The parsed message re-encoded: the same JSON value as the bytes that arrived.
          value: Buffer.from(JSON.stringify(event), 'utf8'),
        },
        group: consumerGroup('semantic-monitor', Topics.requestTelemetry),
        reason: 'schema-mismatch',
        error,
        attempts: 0,
        parsed: event,
      }),
    );
  }

  private tokenStatsEntry(
    record: RequestRecord,
    a: ResponseAssessment,
    sample: TokenSample | null,
  ): TokenStatsEntry {
    return {
      requestId: record.requestId,
      endedAt: record.startedAt + record.e2eMs,
      ...(record.phase ? { phase: record.phase } : {}),
      ...tokenStats(record),
      assessment: a.status,
      meanEntropyBits: a.meanEntropyBits,
      maxWindowMeanBits: a.maxWindowMeanBits,
      riskSegments: a.riskSegments.length,
      latencySloMet: a.latencySloMet,
      checks: a.checks,
      ...(sample ? { tokenSample: sample } : {}),
    };
  }

  private detectorSignals(
    batch: RequestTelemetry,
    id: string,
    record: RequestRecord,
    a: ResponseAssessment,
  ): DetectorSignal[] {
    const out: DetectorSignal[] = a.riskSegments.map((s, i) =>
      this.detector(
        batch,
        `${id}/risk/${i}`,
        record.requestId,
        Detectors.hallucinationRisk,
        'warning',
        `hallucination risk at tokens [${s.start}, ${s.end}): mean entropy ${s.meanEntropyBits.toFixed(2)} bits, window peak ${s.peakWindowMeanBits.toFixed(2)} bits`,
        {
          start: s.start,
          end: s.end,
          tokens: s.end - s.start,
          responseTokens: record.logprobs?.length ?? 0,
          meanEntropyBits: s.meanEntropyBits,
          peakWindowMeanBits: s.peakWindowMeanBits,
          thresholdBits: DEFAULT_HALLUCINATION_RISK.highBits,
        },
      ),
    );
    const p = a.promptExplosion;
    if (p?.exploded) {
      out.push(
        this.detector(
          batch,
          `${id}/prompt`,
          record.requestId,
          Detectors.promptExplosion,
          'critical',
          `prompt explosion (${p.reasons.join(', ')}): depth ${p.depth.depth} (${p.depth.deepestPath.join('>')}), ${p.tokens} tokens${p.surgeRatio === null ? '' : `, ${p.surgeRatio.toFixed(2)} x P95 baseline`}`,
          {
            depth: p.depth.depth,
            depthLimit: 5,
            tokens: p.tokens,
            ...(p.baselineP95 === null ? {} : { baselineP95: p.baselineP95 }),
            ...(p.surgeRatio === null ? {} : { surgeRatio: p.surgeRatio }),
            surgeRatioLimit: 3,
            depthExceeded: p.reasons.includes('depth') ? 1 : 0,
            surgeExceeded: p.reasons.includes('surge') ? 1 : 0,
          },
        ),
      );
    }
    return out;
  }

  /** The reranker-busy and semantic-failure-rate episodes this record opened or cleared. */
  private episodeSignals(
    batch: RequestTelemetry,
    id: string,
    run: MonitorRun,
    record: RequestRecord,
    a: ResponseAssessment,
  ): DetectorSignal[] {
    const out: DetectorSignal[] = [];
    const end = record.startedAt + record.e2eMs;
    const busy = rerankerBusyOf(record.errorMessage);
    const refused = run.rerankerBusy.observe(end, busy !== null);
    if (refused)
      out.push(
        this.episodeSignal(
          batch,
          `${id}/reranker-busy`,
          record.requestId,
          Detectors.rerankerBusy,
          refused,
          `reranker busy: ${refused.hits}/${refused.samples} requests (${pct(refused.share)}) refused in the last ${EPISODE_WATCHES.rerankerBusy.windowMs / 1000} s${busy ? `, latest ${busy.inUse}/${busy.cap} in use` : ''}`,
          {
            refused: refused.hits,
            requests: refused.samples,
            ...(busy ? { inUse: busy.inUse, cap: busy.cap } : {}),
          },
        ),
      );
    const checks = Object.values(a.checks);
    if (checks.length) {
      const failing = run.semanticFailures.observe(end, checks.includes(false));
      if (failing)
        out.push(
          this.episodeSignal(
            batch,
            `${id}/semantic-failure-rate`,
            record.requestId,
            Detectors.semanticFailureRate,
            failing,
            `semantic failure rate ${pct(failing.share)} (${failing.hits}/${failing.samples} responses failed a semantic check in the last ${EPISODE_WATCHES.semanticFailureRate.windowMs / 1000} s; bound ${pct(failing.bound)}, the run's own ${pct(failing.baselineShare ?? 0)} + ${pct(EPISODE_WATCHES.semanticFailureRate.baseline.rise)}, floor ${pct(EPISODE_WATCHES.semanticFailureRate.openShare)}: spec task success > 92 %)`,
            {
              failed: failing.hits,
              judged: failing.samples,
              ...(failing.baselineShare !== null ? { baselineShare: failing.baselineShare } : {}),
            },
          ),
        );
    }
    return out;
  }

  /** An episode's signal: critical when it opens (the analyzer opens the breaker), info when it clears. */
  private episodeSignal(
    batch: RequestTelemetry,
    id: string,
    requestId: string,
    detector: DetectorName,
    change: EpisodeChange,
    message: string,
    figures: Record<string, number>,
  ): DetectorSignal {
    return this.detector(
      batch,
      id,
      requestId,
      detector,
      change.kind === 'opened' ? 'critical' : 'info',
      change.kind === 'opened' ? message : `cleared: ${message}`,
      { share: change.share, bound: change.bound, ...figures },
    );
  }

  private detector(
    batch: { campaignId: string; runId: string },
    id: string,
    requestId: string | null,
    detector: string,
    severity: DetectorSignal['severity'],
    message: string,
    figures: Record<string, number>,
  ): DetectorSignal {
    return {
      ...envelope(batch.campaignId, batch.runId),
      id,
      kind: 'detector',
      detector,
      requestId,
      severity,
      message,
      figures,
    };
  }

  /**
   * Publishes the run's semantic goodput once: when every shard has ended and all the records
   * the shards published were judged, or `settleMs` after the last shard ended (then with
   * `complete: 0`).
   */
  private async maybePublishGoodput(runId: string, run: MonitorRun, force: boolean): Promise<void> {
    if (run.goodputPublished || !run.allShardsEnded()) return;
    const expected = run.expectedRecords();
    const complete = run.ledger.requests >= expected;
    if (!complete && !force) {
      run.settleTimer ??= setTimeout(
        () => void this.maybePublishGoodput(runId, run, true).catch(() => undefined),
        this.settleMs,
      );
      return;
    }
    run.goodputPublished = true;
    run.cancelSettle();
    void run.baseline
      ?.finish(complete, this.sampler.settled)
      .catch((e: Error) => this.logger.warn(`baseline: ${e.message}`));
    void run.ragMismatch
      .finish(complete, this.sampler.settled)
      .catch((e: Error) => this.logger.warn(`rag mismatch: ${e.message}`));
    const g = run.ledger.report(run.durationS());
    const drift = run.drift.figures();
    const figures: Record<string, number> = {
      requests: g.requests,
      expectedRecords: expected,
      complete: complete ? 1 : 0,
      goodRequests: g.goodRequests,
      semanticallyGoodRequests: g.semanticallyGoodRequests,
      embeddingSampleRate: this.sampler.rateFigure(),
      embedded: drift.embedded,
      embeddingDrifted: drift.drifted,
    };
    if (g.goodput !== null) figures.goodput = g.goodput;
    if (g.semanticGoodput !== null) figures.semanticGoodput = g.semanticGoodput;
    if (g.goodputPerSecond !== null) figures.goodputPerSecond = g.goodputPerSecond;
    if (g.semanticGoodputPerSecond !== null) figures.semanticGoodputPerSecond = g.semanticGoodputPerSecond;
    if (drift.meanCosineToBaseline !== null) figures.meanCosineToBaseline = drift.meanCosineToBaseline;
    Object.assign(figures, this.sampler.costFigures());
    Object.assign(figures, this.toolContracts.figures(runId));
    Object.assign(figures, this.llmMonitor.figures(runId));
    for (const [check, failures] of Object.entries(g.checkFailures)) figures[`failed.${check}`] = failures;
    const pct = (v: number | null) => (v === null ? 'n/a' : `${(v * 100).toFixed(1)} %`);
    await this.bus.publish(
      Topics.semanticSignal,
      this.detector(
        { campaignId: run.campaignId, runId },
        `${runId}/semantic-goodput`,
        null,
        Detectors.semanticGoodput,
        'info',
        `goodput ${pct(g.goodput)}, semantic goodput ${pct(g.semanticGoodput)} of ${g.requests} requests${complete ? '' : ` (${expected - g.requests} records missing)`}`,
        figures,
      ),
    );
  }

  /**
   * Loads the embedding model now rather than with the first run, and resolves once it is loaded
   * (or cannot be, or embeddings are off): a host about to measure a run (`fathom run`) waits for
   * it, so the model's load is not paid from the run's CPU.
   */
  /**
   * Loads the embedding model and the LLM monitor's anomaly model now, not on a run's first
   * records: loading either inside a short run took its CPU from the load (the LLM monitor's
   * session cost a `fathom run` of 10 s about a tenth of its throughput).
   */
  async warmModels(): Promise<void> {
    this.sampler.startModel();
    await Promise.all([this.sampler.ready(), this.llmMonitor.ready()]);
  }

  /** Says on every open run that embeddings stopped (monitor-fault), and why. */
  private async onEmbedderFault(message: string, restartInMs: number | null, n: number): Promise<void> {
    const text =
      restartInMs === null
        ? `embedder unavailable, embeddings off: ${message}`
        : `embedding worker died (${message}); embeddings paused, restart in ${restartInMs} ms`;
    this.logger.warn(text);
    const open = [...this.runs.entries()].filter(([, run]) => !run.goodputPublished);
    const signals = open.map(([runId, run]) =>
      this.detector(
        { campaignId: run.campaignId, runId },
        `${runId}/embedder-fault/${n}`,
        null,
        Detectors.monitorFault,
        'warning',
        text,
        { embedderFaults: n, ...(restartInMs === null ? {} : { restartInMs }) },
      ),
    );
    if (signals.length > 0)
      await this.bus
        .publishMany(Topics.semanticSignal, signals)
        .catch((e: Error) => this.logger.warn(`could not publish the embedder fault: ${e.message}`));
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
