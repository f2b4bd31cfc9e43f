import { Injectable, Logger, Optional } from '@nestjs/common';
import { InjectBus, type Bus } from '@fathom/bus';
import {
  Detectors,
  Topics,
  envelope,
  type DetectorSignal,
  type RequestRecord,
  type RunShardCommand,
  type SemanticBaselineSpec,
} from '@fathom/contracts';
import {
  INTENT_ACCURACY_DROP_LIMIT,
  MAX_RESPONSES_PER_PROMPT,
  OnnxIntentClassifier,
  RESPONSE_BASELINE_NAME,
  ResponseBaseline,
  ResponseBaselineRecorder,
  ResponseDriftTally,
  fingerprint,
  intentAccuracyDrop,
  intentHeadToOnnx,
  intentLabeller,
  preferUseful,
  trainNearestCentroidHead,
} from '@fathom/semantic';
import { BaselineRepository } from '@fathom/storage';

/** Progress signals while the run lasts, at most this often, so the analyzer's tier spans see the drop. */
const PROGRESS_EVERY_MS = 2000;

interface EmbedderIdentity {
  readonly name: string;
  readonly dimensions: number;
}

/** The baseline this run is compared with, ready to use. */
interface Comparison {
  readonly baseline: ResponseBaseline;
  readonly drift: ResponseDriftTally;
  /** Null when intent accuracy cannot be measured (fewer than two intents); `why` says so. */
  readonly classifier: OnnxIntentClassifier | null;
  readonly why: string | null;
  readonly labels: ReadonlySet<string>;
  readonly baselineAccuracy: number | null;
  readonly source: string;
}

export interface BaselineDriftDeps {
  readonly repository: BaselineRepository | null;
  readonly publish: (signal: DetectorSignal) => Promise<void>;
  readonly logger: Pick<Logger, 'warn'>;
  readonly now?: () => number;
}

/**
 * One run against its baseline run (campaign spec `semantic.baseline`). The monitor hands it the
 * records it is about to embed (`prefer`: same count, chosen for prompts the baseline has or the
 * recording still lacks) and then their embeddings (`observe`). Each embedded response with a
 * prompt is (1) kept for this run's own baseline, bounded by `maxItems`, (2) compared by cosine
 * with the baseline's responses to the same prompt, (3) classified by the intent head trained on
 * the baseline's embeddings (ONNX, run by onnxruntime-node; or the user's classifier). Signals go
 * out while the run lasts (at most every 2 s) and once at the end, when the run is also stored as
 * a baseline if it completed and did not drift.
 */
export class BaselineDriftWatch {
  private readonly recorder: ResponseBaselineRecorder | null;
  private readonly label: (prompt: string, key: string) => string | null;
  private readonly comparedPerKey = new Map<string, number>();
  private readonly keys = new WeakMap<RequestRecord, string>();
  private readonly ready: Promise<void>;
  private comparison: Comparison | null = null;
  private embedder: EmbedderIdentity | null = null;
  private embedderMismatch: string | null = null;
  private classified = 0;
  private correct = 0;
  private lastProgressAt = 0;
  private progressSeq = 0;
  private finished = false;
  private readonly now: () => number;

  constructor(
    private readonly campaignId: string,
    private readonly runId: string,
    private readonly spec: SemanticBaselineSpec,
    private readonly deps: BaselineDriftDeps,
  ) {
    this.now = deps.now ?? Date.now;
    this.recorder = spec.record ? new ResponseBaselineRecorder(spec.maxItems) : null;
    this.label = intentLabeller(spec.intents);
    this.ready = this.load().catch(async (error: unknown) => {
      await this.signal(
        'load',
        Detectors.baselineDrift,
        'warning',
        `baseline not usable: ${errorText(error)}`,
        {},
      );
    });
  }

  /** Swaps sampled records for more telling ones of the same batch; the count stays the sampler's. */
  prefer(sampled: RequestRecord[], batch: readonly RequestRecord[]): RequestRecord[] {
    const planned = new Map<string, number>();
    return preferUseful(sampled, batch, (record) => {
      const key = this.keyOf(record);
      if (key === null || record.errorClass !== null || record.content.length === 0) return false;
      const n = planned.get(key) ?? 0;
      const recording = this.recorder?.wants(key) === true && n < MAX_RESPONSES_PER_PROMPT;
      const comparing =
        this.comparison?.baseline.has(key) === true &&
        (this.comparedPerKey.get(key) ?? 0) + n < MAX_RESPONSES_PER_PROMPT;
      if (!recording && !comparing) return false;
      planned.set(key, n + 1);
      return true;
    });
  }

  /** The embeddings of `records`, in order, from `embedder`. */
  async observe(
    records: readonly RequestRecord[],
    vectors: readonly Float32Array[],
    embedder: EmbedderIdentity,
  ): Promise<void> {
    if (this.finished) return;
    await this.ready;
    this.embedder ??= embedder;
    const c = this.comparable(embedder);
    const toClassify: { vector: Float32Array; label: string }[] = [];
    records.forEach((record, i) => {
      const key = this.keyOf(record);
      if (key === null || record.errorClass !== null || record.content.length === 0) return;
      this.recorder?.add(key, record.prompt ?? '', vectors[i]);
      if (!c) return;
      if (c.drift.add(key, vectors[i]) !== null)
        this.comparedPerKey.set(key, (this.comparedPerKey.get(key) ?? 0) + 1);
      const label = this.label(record.prompt ?? '', key);
      if (c.classifier && label !== null && c.labels.has(label))
        toClassify.push({ vector: vectors[i], label });
    });
    if (c?.classifier && toClassify.length > 0) {
      const predictions = await c.classifier.classify(toClassify.map((t) => t.vector));
      this.classified += predictions.length;
      this.correct += predictions.filter((p, i) => p.label === toClassify[i].label).length;
    }
    if (c && this.now() - this.lastProgressAt >= PROGRESS_EVERY_MS) {
      this.lastProgressAt = this.now();
      await this.publishVerdict(`progress-${this.progressSeq++}`, c);
    }
  }

  /**
   * Publishes the final verdict once `settled` (the embedding in flight) is done, then stores
   * this run as a baseline when asked to, its records were complete and it did not drift.
   */
  async finish(complete: boolean, settled: Promise<unknown>): Promise<void> {
    if (this.finished) return;
    await settled.catch(() => undefined);
    await this.ready;
    this.finished = true;
    const c = this.comparable(this.embedder);
    const verdict = c ? await this.publishVerdict('final', c) : null;
    if (!this.recorder) return;
    const skip = !complete
      ? 'its records were incomplete'
      : verdict?.unhealthy
        ? 'it drifted from its own baseline'
        : this.recorder.size === 0 || this.embedder === null
          ? 'no response was embedded'
          : this.deps.repository === null
            ? 'the semantic-monitor has no database'
            : null;
    if (skip !== null) {
      await this.signal(
        'record',
        Detectors.baselineDrift,
        'info',
        `run not recorded as a baseline: ${skip}`,
        {
          responses: this.recorder.size,
        },
      );
      return;
    }
    const embedder = this.embedder as EmbedderIdentity;
    await (this.deps.repository as BaselineRepository).save({
      campaignId: this.campaignId,
      runId: this.runId,
      name: RESPONSE_BASELINE_NAME,
      data: this.recorder.toData({
        runId: this.runId,
        embedder: embedder.name,
        dimensions: embedder.dimensions,
      }),
    });
    await this.signal(
      'record',
      Detectors.baselineDrift,
      'info',
      `run recorded as a baseline: ${this.recorder.size} responses`,
      { responses: this.recorder.size },
    );
  }

  private keyOf(record: RequestRecord): string | null {
    if (record.prompt === undefined || record.prompt.length === 0) return null;
    let key = this.keys.get(record);
    if (key === undefined) this.keys.set(record, (key = fingerprint(record.prompt)));
    return key;
  }

  /** The comparison when its baseline was embedded by this embedder; says so once when not. */
  private comparable(embedder: EmbedderIdentity | null): Comparison | null {
    const c = this.comparison;
    if (!c || !embedder) return null;
    if (c.baseline.embedder === embedder.name && c.baseline.dimensions === embedder.dimensions) return c;
    if (this.embedderMismatch === null) {
      this.embedderMismatch = `baseline ${c.source} was embedded by ${c.baseline.embedder} (${c.baseline.dimensions} dimensions), this run by ${embedder.name} (${embedder.dimensions}): not comparable`;
      void this.signal('embedder', Detectors.baselineDrift, 'warning', this.embedderMismatch, {});
    }
    return null;
  }

  private async load(): Promise<void> {
    const target = this.spec.compareWith;
    if (target === 'none') return;
    if (!this.deps.repository) {
      await this.signal(
        'load',
        Detectors.baselineDrift,
        'warning',
        'no baseline: the semantic-monitor has no database',
        {},
      );
      return;
    }
    const stored =
      target === 'latest'
        ? await this.deps.repository.latestForCampaign(this.campaignId, { name: RESPONSE_BASELINE_NAME })
        : await this.deps.repository.forRun(target.runId, RESPONSE_BASELINE_NAME);
    if (!stored || stored.runId === this.runId) {
      await this.signal(
        'load',
        Detectors.baselineDrift,
        target === 'latest' ? 'info' : 'warning',
        target === 'latest'
          ? 'no baseline yet: no earlier run of this campaign was recorded'
          : `no baseline for run ${target.runId}: it was not recorded (no semantic.baseline.record, incomplete records, or it drifted)`,
        {},
      );
      return;
    }
    const baseline = ResponseBaseline.fromData(stored.data);
    const source = `run ${baseline.runId}`;
    const labelled = baseline.items
      .map((item) => ({ vector: item.vector, label: this.label(item.prompt, item.key) }))
      .filter((i): i is { vector: Float32Array; label: string } => i.label !== null);
    let classifier: OnnxIntentClassifier | null = null;
    let labels: ReadonlySet<string> = new Set();
    let why: string | null = null;
    if (this.spec.classifier) {
      labels = new Set(this.spec.classifier.labels);
      classifier = await OnnxIntentClassifier.load(
        this.spec.classifier.path,
        this.spec.classifier.labels,
        baseline.dimensions,
      );
    } else if (new Set(labelled.map((l) => l.label)).size < 2) {
      why = `baseline ${source} holds fewer than two intents: accuracy not measured`;
    } else {
      const head = trainNearestCentroidHead(
        labelled.map((l) => l.vector),
        labelled.map((l) => l.label),
      );
      labels = new Set(head.labels);
      classifier = await OnnxIntentClassifier.load(intentHeadToOnnx(head), head.labels, head.dimensions);
    }
    const known = labelled.filter((l) => labels.has(l.label));
    const baselineAccuracy =
      classifier && known.length > 0
        ? await classifier.accuracy(
            known.map((k) => k.vector),
            known.map((k) => k.label),
          )
        : null;
    this.comparison = {
      baseline,
      drift: new ResponseDriftTally(baseline, this.spec),
      classifier,
      why,
      labels,
      baselineAccuracy,
      source,
    };
  }

  private async publishVerdict(seq: string, c: Comparison): Promise<{ unhealthy: boolean }> {
    const d = c.drift.figures();
    const driftFigures: Record<string, number> = {
      pairs: d.pairs,
      drifted: d.drifted,
      baselinePrompts: c.baseline.prompts,
      minCosineLimit: this.spec.minCosine,
      maxDriftedShare: this.spec.maxDriftedShare,
    };
    if (d.meanCosine !== null) driftFigures.meanCosine = d.meanCosine;
    if (d.minCosine !== null) driftFigures.minCosine = d.minCosine;
    if (d.driftedShare !== null) driftFigures.driftedShare = d.driftedShare;
    const enough = d.pairs >= this.spec.minPairs;
    await this.signal(
      seq,
      Detectors.baselineDrift,
      d.flagged ? 'warning' : 'info',
      !enough
        ? `${d.pairs} responses compared with ${c.source}, fewer than ${this.spec.minPairs}: no verdict`
        : `${d.flagged ? 'drifted' : 'no drift'} from ${c.source}: ${d.drifted} of ${d.pairs} responses below cosine ${this.spec.minCosine}, mean ${(d.meanCosine ?? 0).toFixed(3)}`,
      driftFigures,
    );
    let unhealthy = d.flagged;
    if (c.classifier && c.baselineAccuracy !== null) {
      const accuracy = this.classified ? this.correct / this.classified : null;
      const figures: Record<string, number> = {
        classified: this.classified,
        baselineAccuracy: c.baselineAccuracy,
        intents: c.labels.size,
        limit: INTENT_ACCURACY_DROP_LIMIT,
      };
      let message: string;
      let severity: DetectorSignal['severity'] = 'info';
      if (accuracy === null || this.classified < this.spec.minPairs) {
        message = `${this.classified} responses classified, fewer than ${this.spec.minPairs}: no verdict`;
      } else {
        const v = intentAccuracyDrop(c.baselineAccuracy, accuracy);
        figures.accuracy = accuracy;
        figures.intentAccuracyDrop = v.drop;
        if (!v.healthy) severity = 'critical';
        unhealthy ||= !v.healthy;
        message = `intent accuracy ${pct(accuracy)} vs ${pct(c.baselineAccuracy)} in ${c.source}: drop ${pct(v.drop)} ${v.healthy ? '<' : '>='} ${pct(INTENT_ACCURACY_DROP_LIMIT)}`;
      }
      await this.signal(seq, Detectors.intentAccuracy, severity, message, figures);
    } else if (seq === 'final' && c.why !== null) {
      await this.signal(seq, Detectors.intentAccuracy, 'info', c.why, {});
    }
    return { unhealthy };
  }

  private async signal(
    seq: string,
    detector: string,
    severity: DetectorSignal['severity'],
    message: string,
    figures: Record<string, number>,
  ): Promise<void> {
    try {
      await this.deps.publish({
        ...envelope(this.campaignId, this.runId),
        // Derived ids keep a redelivery idempotent downstream.
        id: `${this.runId}/${detector}/${seq}`,
        kind: 'detector',
        detector,
        requestId: null,
        severity,
        message,
        figures,
      });
    } catch (error) {
      this.deps.logger.warn(`run ${this.runId}: could not publish ${detector}: ${errorText(error)}`);
    }
  }
}

/** Makes a `BaselineDriftWatch` for each run whose campaign asks for one. */
@Injectable()
export class BaselineDriftService {
  private readonly logger = new Logger(BaselineDriftService.name);

  constructor(
    @InjectBus() private readonly bus: Bus,
    // Absent where the semantic-monitor runs without a database: baselines are then neither loaded nor stored.
    @Optional() private readonly repository?: BaselineRepository,
  ) {}

  watch(command: RunShardCommand): BaselineDriftWatch | null {
    const spec = command.spec.semantic?.baseline;
    if (!spec) return null;
    return new BaselineDriftWatch(command.campaignId, command.runId, spec, {
      repository: this.repository ?? null,
      publish: (signal) => this.bus.publish(Topics.semanticSignal, signal),
      logger: this.logger,
    });
  }
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)} %`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
