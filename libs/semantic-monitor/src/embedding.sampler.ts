import { Logger } from '@nestjs/common';
import type { RequestRecord } from '@fathom/contracts';
import { HostResourceReader } from '@fathom/gpu';
import {
  AdaptiveSampleRate,
  CachedEmbedder,
  EmbedderUnavailableError,
  WorkerEmbedder,
  embeddingModelFromChoice,
} from '@fathom/semantic';
import type { MonitorRun } from './monitor-run.state';
import { RagEmbeddingBudget, planEmbeddings } from './rag-mismatch.watch';

export interface EmbeddingSamplerOptions {
  /** FATHOM_SEMANTIC_EMBEDDER: `use-lite`, `onnx:<folder>`, or `off`. */
  embedder: string;
  /** The adaptive rate's floor (FATHOM_SEMANTIC_MIN_SAMPLE_RATE). */
  minSampleRate: number;
  /** The model's worker died (`restartInMs` null: for good); `fault` counts them from 1. */
  onFault: (message: string, restartInMs: number | null, fault: number) => void;
}

/**
 * The monitor's embedding sample, off the hot path. Invariants:
 * - the rate follows the host's CPU left (AIMD, re-read every second from `start`);
 * - at most one batch is in flight; a sample that finds it busy is skipped, never queued;
 * - the model runs in a worker thread started by `startModel` (the first run), so an idle
 *   monitor loads nothing; while it loads or restarts, samples go without embeddings;
 * - `settled` resolves when no batch is in flight (end-of-run verdicts wait for it).
 */
export class EmbeddingSampler {
  private readonly logger = new Logger(EmbeddingSampler.name);
  private readonly rate: AdaptiveSampleRate;
  /** The sample budget counted in texts: a RAG record's query and documents are several. */
  private readonly ragBudget = new RagEmbeddingBudget();
  private readonly host = new HostResourceReader();
  private cpuTimer: NodeJS.Timeout | null = null;
  /** The worker running the model; null until the first run, or with the embedder off. */
  private worker: WorkerEmbedder | null = null;
  /** The LRU cache in front of the worker, made once the worker's model is loaded. */
  private embedder: CachedEmbedder | null = null;
  private faults = 0;
  private embedding = false;
  private inFlight: Promise<unknown> = Promise.resolve();
  private embeddingMs = 0;
  private embeddedTexts = 0;

  constructor(private readonly options: EmbeddingSamplerOptions) {
    this.rate = new AdaptiveSampleRate({ min: options.minSampleRate });
  }

  start(): void {
    this.cpuTimer = setInterval(() => this.rate.adjust(this.host.read().cpuPct), 1000);
    this.cpuTimer.unref();
  }

  async close(): Promise<void> {
    if (this.cpuTimer) clearInterval(this.cpuTimer);
    await this.worker?.close();
  }

  /** The embedding batch in flight (resolved when none). */
  get settled(): Promise<unknown> {
    return this.inFlight;
  }

  /** Whether a judged record goes into the sample (a draw at the current rate, within the RAG budget). */
  admit(record: RequestRecord): boolean {
    return record.content.length > 0 && this.rate.take() && this.ragBudget.admit(record);
  }

  /** The sampler's figures for a run's goodput signal, in the signal's order. */
  rateFigure(): number {
    return this.rate.rate;
  }

  costFigures(): Record<string, number> {
    const figures: Record<string, number> = {};
    if (this.embeddedTexts > 0) figures.embeddingMsPerText = this.embeddingMs / this.embeddedTexts;
    if (this.worker) {
      figures.embedderWorkerStarts = this.worker.starts;
      figures.embedderFaults = this.faults;
    }
    return figures;
  }

  /** Embeds a sample of `run` and hands the vectors to its drift, RAG and baseline watches. */
  embed(run: MonitorRun, records: RequestRecord[]): void {
    // One batch in flight; the sample is thinned, never queued. No embedder yet (the model is
    // loading) or none now (the worker died and restarts): the sample goes without embeddings.
    const embedder = this.embedder;
    if (this.embedding || !embedder || !this.worker?.available) return;
    this.embedding = true;
    const started = performance.now();
    // RAG records with documents embed their query and documents, the others their response.
    const plan = planEmbeddings(records);
    this.inFlight = embedder
      .embed(plan.texts)
      .then(async (vectors) => {
        const responses = plan.responses.map((r) => vectors[r.at]);
        for (const v of responses) run.drift.add(v);
        this.embeddingMs += performance.now() - started;
        this.embeddedTexts += plan.texts.length;
        await run.ragMismatch
          .observe(plan.retrievals, vectors, embedder.dimensions)
          .catch((e: Error) => this.logger.warn(`rag mismatch: ${e.message}`));
        await run.baseline?.observe(
          plan.responses.map((r) => r.record),
          responses,
          embedder,
        );
      })
      .catch((error: Error) => {
        // A worker that died mid-sample was reported through onFault already.
        if (!(error instanceof EmbedderUnavailableError))
          this.logger.warn(`embedding sample failed: ${error.message}`);
      })
      .finally(() => (this.embedding = false));
  }

  /** Resolves once the model's worker is loaded, or cannot be (or none was started). */
  async ready(): Promise<void> {
    await this.worker?.ready().catch(() => undefined);
  }

  /**
   * Starts the model's worker once. It loads when the first run arrives: `fathom up` starts
   * without waiting for it and a service that never sees a run loads nothing; by the first
   * sample (a telemetry flush later) the load is underway off this thread, costing CPU but never
   * a stall here.
   */
  startModel(): void {
    if (this.worker) return;
    const choice = this.options.embedder;
    if (choice === 'off') return;
    let model;
    try {
      model = embeddingModelFromChoice(choice);
    } catch (error) {
      this.logger.warn(`embeddings off: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    const worker = new WorkerEmbedder({
      model,
      onReady: ({ name, loadMs }) => {
        this.embedder ??= new CachedEmbedder(worker);
        this.logger.log(`embedder ${name} ready in its worker (${loadMs.toFixed(0)} ms)`);
      },
      onFault: (fault) => this.options.onFault(fault.message, fault.restartInMs, ++this.faults),
    });
    this.worker = worker;
  }
}
