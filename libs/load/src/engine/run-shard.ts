import { randomFillSync } from 'node:crypto';
import type { CampaignSpec, LoadProfile, LoadSegment, RequestRecord, ShardCounts } from '@fathom/contracts';
import * as hdr from 'hdr-histogram-js';
import { AimdController, type AimdStep } from '../adaptive/aimd.controller';
import type { GpuMemoryGauge } from '../adaptive/gpu-memory.gauge';
import type { PromptSource } from '../dataset/prompt.source';
import type { PromptItem } from '../dataset/prompt-item';
import { O200K_BASE, loadTokenizer, type TextTokenizer } from '../dataset/text.tokenizer';
import {
  RequestCancel,
  RequestTimeout,
  RunAborted,
  type DriverOutcome,
  type RequestDriver,
} from '../driver/request-outcome';
import { errorText } from '../driver/error-class.util';
import { newLatencyHistogram, recordMs } from '../measure/latency-histogram.util';
import type { RequestSample } from '../measure/window.recorder';
import { PhasedRecorder, type PhaseSlot } from '../measure/phased.recorder';
import { SloAbortWatch } from '../threshold/slo-abort.watch';
import { GeneratorHealthMonitor, clientBoundReason } from '../measure/generator-health';
import { RecordBudget } from '../measure/record-budget';
import { WindowEncoder } from '../measure/window.encoder';
import type { WindowSnapshot } from '../measure/window.snapshot';
import { replaySchedule, scheduleFor, type ArrivalSchedule } from '../profile/arrival.schedule';
import { intentPathsOf, loadReplay } from '../profile/replay.loader';
import { TracePromptBuilder } from '../dataset/trace-prompt.builder';
import { shareOf } from '../profile/shard-share.util';
import { SeededRandom, deriveSeed } from '../random/seeded-random';
import { Sleeper } from './sleeper';
import { createDriver, promptSourceOf } from './driver.factory';
import { tpotMs } from './tpot.util';
import { runSweep, type StepTag, type SweepResult } from './sweep.executor';

/** Outputs only consume and must never block the engine (k6's rule): both are called inline. */
export interface TelemetrySink {
  /** A sampled request (the engine applies the record budget or `spec.load.recordSampleRate`). */
  record(record: RequestRecord): void;
  /** Every `windowMs` (default 1000) and a final partial window. */
  window(window: WindowSnapshot): void;
}

export interface RunShardOptions {
  spec: CampaignSpec;
  shard: { index: number; count: number };
  runId: string;
  campaignId: string;
  generatorId: string;
  sink: TelemetrySink;
  /** Abort: no new request starts, in-flight ones are aborted (class `aborted`), within a second. */
  signal: AbortSignal;
  windowMs?: number;
  /** Circuit breaker: false = do not send on this path (the iteration is counted `gated`). */
  gate?: (path: string) => boolean;
  /** GPU memory readings for the adaptive profile (the service reports into it). */
  gpu?: GpuMemoryGauge;
  /** Response text kept per record (default 2048 chars). */
  contentCapChars?: number;
  /**
   * Synchronous observer of every finished request, sampled or not (joins with server-side ground
   * truth, e.g. `serverRequestId`). `sentMono` is the performance.now() of the actual send, from
   * which `chunkOffsetsMs` count. Runs on the hot path: it must be cheap and must not throw.
   */
  tap?: (requestId: string, outcome: DriverOutcome, sentMono: number) => void;
}

export interface AdaptiveTrace {
  atMs: number;
  p95Ms: number | null;
  gpuMemoryUsed: number | null;
  concurrency: number;
  inputScale: number;
  reason: AimdStep['reason'];
}

/** The contract's counts (the service adds recordsPublished/windowsPublished) and what only we know. */
export interface ShardResult extends Omit<ShardCounts, 'recordsPublished' | 'windowsPublished'> {
  /** Open model: iterations started later than lateToleranceMs after their intended time. */
  late: number;
  /** Iterations not sent because the gate (breaker) refused their path. */
  gated: number;
  recordsSampled: number;
  windows: number;
  /** Calls into the sink that threw (the load went on; the sink must report its own failures). */
  sinkErrors: number;
  /** Named assertions of HTTP steps over the shard. */
  assertions: Record<string, { passed: number; failed: number }>;
  /** Sweep: the measured synchronous and throughput rates (req/s of this shard) and the rates run. */
  sweep?: SweepResult;
  /** Why the load ended: duration, abort, or the campaign SLO failing under `slo.abortOnFail`. */
  endReason: 'duration' | 'aborted' | 'slo-failed';
  /** With `slo-failed`: the thresholds that failed. */
  endDetail?: string;
  /** Adaptive: the controller's last steps (at most 600). */
  adaptive?: AdaptiveTrace[];
}

const CLOSED_DEFAULT: LoadProfile = { type: 'closed', seed: 1, thinkTimeMs: 0, thinkTimeJitterMs: 0 };
/** A gated virtual user waits this long before it asks the gate again (no busy loop). */
const GATED_BACKOFF_MS = 100;
const ADAPTIVE_TRACE_CAP = 600;

/** Resolves in a later macrotask (after the event loop's next poll for I/O). */
function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Runs shard `shard.index` of `shard.count` of a campaign until its duration ends or `signal` aborts. */
export async function runShard(options: RunShardOptions): Promise<ShardResult> {
  const engine = new ShardEngine(options);
  return engine.run();
}

class ShardEngine {
  private readonly spec: CampaignSpec;
  private readonly profile: LoadProfile;
  private readonly shard: { index: number; count: number };
  /** One window recorder per phase (sweep step x warm-up/measured/cool-down). */
  private readonly recorder: PhasedRecorder;
  /** The current step (the whole run unless sweeping) and its time span, for its segments. */
  private step: { tag: StepTag; startMono: number; endMono: number; warmupLeft: number } = {
    tag: { index: 0, kind: 'run' },
    startMono: 0,
    endMono: Infinity,
    warmupLeft: 0,
  };
  private readonly sloWatch: SloAbortWatch | null;
  private runStartMono = 0;
  /** Encodes closed windows in later macrotasks (one histogram each), delivering them in order. */
  private readonly encoder: WindowEncoder;
  private readonly sleeper = new Sleeper();
  /**
   * In-flight requests in start order. Every request has the same timeout, so this is also
   * deadline order: one timer, armed for the oldest deadline, serves them all (no timer per
   * request).
   */
  private readonly cancels = new Set<TimedCancel>();
  private timeoutTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly shardHex: string;
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
  private readonly sampling: SeededRandom;
  /** Which finished requests become records; adapts to `health` once a window. */
  private readonly records: RecordBudget;
  private recordsInWindow = 0;
  private health: GeneratorHealthMonitor | null = null;
  private readonly gate: (path: string) => boolean;
  private readonly windowMs: number;
  private readonly contentCapChars: number;
  private driver!: RequestDriver;
  private source: PromptSource | null = null;
  private tokenizer: TextTokenizer = O200K_BASE;
  private stopped = false;
  private inFlight = 0;
  private slotWaiter: (() => void) | null = null;
  private drainWaiter: (() => void) | null = null;
  private seq = 0;
  private inputScale = 1;
  private readonly epoch0 = Date.now();
  private readonly mono0 = performance.now();
  /** Latency tap for the adaptive controller (successful requests of the current interval). */
  private intervalHistogram: hdr.Histogram | null = null;
  private readonly counts: ShardResult = {
    sent: 0,
    completed: 0,
    errors: 0,
    dropped: 0,
    late: 0,
    gated: 0,
    recordsSampled: 0,
    windows: 0,
    sinkErrors: 0,
    assertions: {},
    endReason: 'duration',
  };

  constructor(private readonly options: RunShardOptions) {
    this.spec = options.spec;
    this.profile = options.spec.load.profile ?? CLOSED_DEFAULT;
    this.shard = options.shard;
    this.windowMs = options.windowMs ?? 1000;
    this.recorder = new PhasedRecorder(this.shard.index, this.windowMs, {
      index: 0,
      kind: 'run',
      segment: 'measured',
    });
    const abortOnFail = options.spec.slo.abortOnFail;
    this.sloWatch = abortOnFail
      ? new SloAbortWatch(options.spec.slo, abortOnFail === true ? 0 : abortOnFail.delayMs)
      : null;
    this.encoder = new WindowEncoder({
      deliver: (window) => this.deliverWindow(window),
      recycle: (histograms) => this.recorder.recycle(histograms),
    });
    this.sampling = new SeededRandom(deriveSeed(this.profile.seed, 1_000_003 + this.shard.index));
    const fixedRate = this.spec.load.recordSampleRate;
    this.records =
      fixedRate !== undefined
        ? RecordBudget.fixed(fixedRate, () => this.sampling.next())
        : RecordBudget.budget(this.spec.load.recordsPerSecond);
    this.gate = options.gate ?? (() => true);
    this.contentCapChars = options.contentCapChars ?? 2048;
    this.shardHex = (this.shard.index & 0xffff).toString(16).padStart(4, '0');
  }

  private epochAt(mono: number): number {
    return this.epoch0 + (mono - this.mono0);
  }

  async run(): Promise<ShardResult> {
    const { signal } = this.options;
    const maxInFlight = Math.max(1, shareOf(this.spec.load.concurrency, this.shard));
    const scenario = this.spec.scenario;
    this.tokenizer = await loadTokenizer(scenario.type === 'chat' ? scenario.tokenizer : undefined);
    this.source = await promptSourceOf(scenario, this.shard.index, this.tokenizer);
    const replayArrivals =
      this.profile.type === 'replay' ? await loadReplay(this.profile.path, this.profile.format) : null;
    const p0 = this.profile;
    const traceItems =
      p0.type === 'replay'
        ? new TracePromptBuilder(this.tokenizer, this.source, {
            seed: deriveSeed(p0.seed, this.shard.index),
            ...(scenario.type === 'chat' && scenario.system !== undefined ? { system: scenario.system } : {}),
            ...(p0.mode === 'intent-paths' ? { paths: intentPathsOf(replayArrivals ?? []) } : {}),
          })
        : null;
    this.driver = createDriver(
      this.spec,
      { connections: maxInFlight, contentCapChars: this.contentCapChars, countTokens: this.tokenizer.count },
      this.source,
    );
    // Set-up outside every request's timing (e.g. a vector collection); a failure fails the shard.
    await this.driver.prepare?.();

    const onAbort = () => {
      this.counts.endReason = 'aborted';
      this.stop(true);
    };
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });

    this.health = new GeneratorHealthMonitor(maxInFlight);
    let windowStartMono = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      this.emitWindow(windowStartMono, this.windowMs);
      windowStartMono = now;
    }, this.windowMs);

    const startMono = performance.now();
    const endMono = startMono + this.spec.load.durationMs;
    this.runStartMono = startMono;
    this.beginStep({ index: 0, kind: 'run' }, startMono, endMono);
    try {
      const p = this.profile;
      switch (p.type) {
        case 'closed':
          await this.runClosed(
            maxInFlight,
            endMono,
            p.thinkTimeMs,
            p.thinkTimeJitterMs,
            new SeededRandom(deriveSeed(p.seed, this.shard.index)),
          );
          break;
        case 'constant-rate':
        case 'poisson':
        case 'gamma':
        case 'ramping-rate':
          await this.runOpen(
            scheduleFor(p, this.spec.load.durationMs, this.shard),
            startMono,
            endMono,
            maxInFlight,
            p,
          );
          break;
        case 'replay':
          await this.runOpen(
            replaySchedule(replayArrivals ?? [], p.speed, this.spec.load.durationMs, this.shard, (a) =>
              traceItems!.item(a),
            ),
            startMono,
            endMono,
            maxInFlight,
            p,
          );
          break;
        case 'sweep':
          this.counts.sweep = await runSweep(p, this.sweepContext(p, maxInFlight), {
            durationMs: this.spec.load.durationMs,
            maxInFlight,
            shard: this.shard,
          });
          break;
        case 'adaptive':
          this.counts.adaptive = await this.runAdaptive(p, endMono, maxInFlight);
          break;
      }
      await this.drained();
    } finally {
      clearInterval(ticker);
      if (this.timeoutTimer !== null) clearTimeout(this.timeoutTimer);
      this.timeoutTimer = null;
      signal.removeEventListener('abort', onAbort);
      this.emitWindow(windowStartMono, Math.max(1, Math.round(performance.now() - windowStartMono)));
      this.health.close();
      this.encoder.drain();
      await this.driver.close().catch(() => undefined);
    }
    return this.counts;
  }

  /**
   * Closes the window of each phase that counted something (and the current phase's) at once;
   * their histograms are encoded and delivered a few ticks later. Judges `slo.abortOnFail` on
   * the measured windows.
   */
  private emitWindow(startMono: number, windowMs: number): void {
    const now = performance.now();
    this.slotAt(now);
    const windows = this.recorder.rotate(this.epochAt(startMono), windowMs, now);
    // The generator's health over this tick, on each window it closed; its loop delay is weighed
    // against the E2E P50 of the busiest of them.
    let e2eP50Ms = 0;
    let most = 0;
    for (const { retired } of windows) {
      const e2e = retired.histograms[0];
      if (e2e.totalCount > most) {
        most = e2e.totalCount;
        e2eP50Ms = e2e.getValueAtPercentile(50) / 1000;
      }
    }
    const health = this.health?.sample(this.recordsInWindow, windowMs, e2eP50Ms) ?? null;
    this.recordsInWindow = 0;
    // A client-bound window halves the record budget: records are the client's main extra work.
    if (health !== null) this.records.adjust(clientBoundReason(health) !== null);
    for (const { phase, retired } of windows) {
      if (phase.segment === 'measured') this.sloWatch?.add(retired);
      retired.counts.phase = phase;
      if (health !== null) retired.counts.health = health;
      this.encoder.push(retired);
    }
    if (this.sloWatch && !this.stopped) {
      const failures = this.sloWatch.failures(now - this.runStartMono);
      if (failures.length) {
        this.counts.endReason = 'slo-failed';
        this.counts.endDetail = failures.join('; ');
        // In-flight requests finish (bounded by the request timeout); nothing new starts.
        this.stop(false);
      }
    }
  }

  /** Starts a step of the load (the whole run, or a sweep step): its warm-up and cool-down restart. */
  private beginStep(tag: StepTag, startMono: number, endMono: number): void {
    const load = this.spec.load;
    this.step = { tag, startMono, endMono, warmupLeft: shareOf(load.warmupRequests ?? 0, this.shard) };
    this.slotAt(startMono);
  }

  /** The segment a request starting at `mono` belongs to; `consume` takes one warm-up request. */
  private segmentAt(mono: number, consume: boolean): LoadSegment {
    const { startMono, endMono } = this.step;
    const load = this.spec.load;
    if (this.step.warmupLeft > 0) {
      if (consume) this.step.warmupLeft--;
      return 'warmup';
    }
    if (mono < startMono + (load.warmupMs ?? 0)) return 'warmup';
    if (load.cooldownMs && mono >= endMono - load.cooldownMs) return 'cooldown';
    return 'measured';
  }

  /** The recorder slot of the current step's segment at `mono` (made current). */
  private slotAt(mono: number, consume = false): PhaseSlot {
    const segment = this.segmentAt(mono, consume);
    const current = this.recorder.current;
    const step = this.step.tag;
    if (current.tag.segment === segment && current.tag.index === step.index && current.tag.kind === step.kind)
      return current;
    return this.recorder.enter({ ...this.step.tag, segment }, mono);
  }

  private sweepContext(
    p: Extract<LoadProfile, { type: 'sweep' }>,
    maxInFlight: number,
  ): Parameters<typeof runSweep>[1] {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const engine = this;
    return {
      get stopped() {
        return engine.stopped;
      },
      sent: () => this.counts.sent,
      beginStep: (tag, startMono, endMono) => this.beginStep(tag, startMono, endMono),
      runClosed: (users, endMono, random) => this.runClosed(users, endMono, 0, 0, random),
      runOpen: (schedule, startMono, endMono) => this.runOpen(schedule, startMono, endMono, maxInFlight, p),
      drained: () => this.drained(),
    };
  }

  private deliverWindow(snapshot: WindowSnapshot): void {
    this.counts.windows++;
    try {
      this.options.sink.window(snapshot);
    } catch {
      // An output that throws must not stop the load; it is counted, the sink logs its own failures.
      this.counts.sinkErrors++;
    }
  }

  private stop(aborted: boolean): void {
    this.stopped = true;
    this.sleeper.wakeAll();
    this.slotWaiter?.();
    if (aborted) for (const cancel of this.cancels) cancel.abort(new RunAborted());
  }

  /** Arms the one timeout timer for the oldest in-flight request that has not expired yet. */
  private armTimeout(): void {
    if (this.timeoutTimer !== null) return;
    const now = performance.now();
    for (const cancel of this.cancels) {
      // Skip only what is already aborted: a deadline that passed while expire() was aborting
      // others (it reads the clock before this) still needs its timer, else that request hangs.
      if (cancel.aborted) continue;
      this.timeoutTimer = setTimeout(() => this.expire(), Math.max(1, Math.ceil(cancel.deadlineMono - now)));
      return;
    }
  }

  /** Aborts every request past its deadline (class `timeout`), then re-arms for the next one. */
  private expire(): void {
    this.timeoutTimer = null;
    const now = performance.now();
    const timeoutMs = this.spec.load.requestTimeoutMs;
    for (const cancel of this.cancels) {
      if (cancel.deadlineMono > now) break;
      cancel.abort(new RequestTimeout(timeoutMs));
    }
    this.armTimeout();
  }

  private drained(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drainWaiter = resolve));
  }

  private waitForSlot(): Promise<void> {
    return new Promise((resolve) => (this.slotWaiter = resolve));
  }

  /** Sends one iteration intended at `intendedMono`; resolves when it has finished and been recorded. */
  private async fire(intendedMono: number, planned?: PromptItem): Promise<DriverOutcome> {
    const item: PromptItem = planned ?? this.source!.next(this.inputScale);
    const seq = ++this.seq;
    const requestId = `${this.options.runId}-${this.shard.index}-${seq}`;
    const startMono = performance.now();
    // Counted in the phase it started in (by its intended time), whenever it ends.
    const slot = this.slotAt(Math.min(intendedMono, startMono), true);
    slot.inFlight++;
    const cancel = new TimedCancel(startMono + this.spec.load.requestTimeoutMs);
    this.cancels.add(cancel);
    this.armTimeout();
    this.inFlight++;
    this.health?.observeSend(startMono - intendedMono, this.inFlight);
    const spanId = this.shardHex + seq.toString(16).padStart(12, '0');
    const traceId = traceIds.next();
    let outcome: DriverOutcome;
    try {
      outcome = await this.driver.execute({
        requestId,
        headers: {
          traceparent: `00-${traceId}-${spanId}-01`,
          'x-fathom-run': this.options.runId,
          'x-fathom-request': requestId,
        },
        cancel,
        startMono,
        item,
        gate: this.gate,
      });
    } catch (error) {
      // Drivers classify their own failures; this is the last line so a bug never crashes a run.
      outcome = {
        status: 0,
        e2eMs: performance.now() - startMono,
        ttftMs: null,
        chunkOffsetsMs: [],
        errorClass: 'other',
        errorMessage: errorText(error),
        inputTokensClient: item.inputTokensClient,
        outputTokensClient: 0,
        usage: null,
        content: '',
        finishReason: null,
      };
    }
    this.cancels.delete(cancel);
    this.inFlight--;
    slot.inFlight--;
    this.account(outcome, requestId, traceId, intendedMono, startMono, item, slot);
    this.options.tap?.(requestId, outcome, startMono + (outcome.sendDelayMs ?? 0));
    const waiter = this.slotWaiter;
    this.slotWaiter = null;
    waiter?.();
    if (this.inFlight === 0 && this.drainWaiter) {
      const drain = this.drainWaiter;
      this.drainWaiter = null;
      drain();
    }
    return outcome;
  }

  private account(
    outcome: DriverOutcome,
    requestId: string,
    traceId: string,
    intendedMono: number,
    startMono: number,
    item: PromptItem,
    slot: PhaseSlot,
  ): void {
    if (outcome.gated) {
      this.counts.gated++;
      return;
    }
    this.counts.sent++;
    if (outcome.errorClass === null) this.counts.completed++;
    else this.counts.errors++;
    if (outcome.assertions)
      for (const [name, passed] of Object.entries(outcome.assertions)) {
        const tally = (this.counts.assertions[name] ??= { passed: 0, failed: 0 });
        if (passed) tally.passed++;
        else tally.failed++;
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
    if (this.intervalHistogram && outcome.errorClass === null) {
      const metric =
        this.profile.type === 'adaptive' && this.profile.metric === 'ttft' ? outcome.ttftMs : outcome.e2eMs;
      if (metric !== null) recordMs(this.intervalHistogram, metric);
    }
    if (this.records.take(sentMono + outcome.e2eMs)) {
      this.counts.recordsSampled++;
      this.recordsInWindow++;
      const record: RequestRecord = {
        requestId,
        traceId,
        phase: slot.ref,
        shard: this.shard.index,
        scheduledAt: this.epochAt(intendedMono),
        startedAt: this.epochAt(sentMono),
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
        prompt: item.text.slice(0, this.contentCapChars),
        finishReason: outcome.finishReason,
      };
      // Optional fields set only when present (no object spreads on the hot path).
      if (outcome.errorMessage !== undefined) record.errorMessage = outcome.errorMessage.slice(0, 1000);
      if (outcome.serverRequestId !== undefined)
        record.serverRequestId = outcome.serverRequestId.slice(0, 200);
      if (outcome.logprobs !== undefined) record.logprobs = outcome.logprobs;
      if (outcome.toolCalls !== undefined) record.toolCalls = outcome.toolCalls;
      if (outcome.retrievedDocuments !== undefined) record.retrievedDocuments = outcome.retrievedDocuments;
      if (outcome.agentLoop !== undefined) record.agentLoop = outcome.agentLoop;
      try {
        this.options.sink.record(record);
      } catch {
        // See emitWindow: outputs never stop the load.
        this.counts.sinkErrors++;
      }
    }
  }

  /** Closed model: `users` virtual users, each sending its next request when the last one ends. */
  private async runClosed(
    users: number,
    endMono: number,
    thinkTimeMs: number,
    thinkTimeJitterMs: number,
    random: SeededRandom,
    isActive: (user: number) => boolean = () => true,
    firstUser = 0,
  ): Promise<void> {
    const user = async (k: number) => {
      let intended = performance.now();
      while (!this.stopped && intended < endMono && isActive(k)) {
        const outcome = await this.fire(intended);
        if (outcome.gated) await this.sleeper.sleep(GATED_BACKOFF_MS);
        const think = thinkTimeMs + (thinkTimeJitterMs > 0 ? random.next() * thinkTimeJitterMs : 0);
        if (think > 0) await this.sleeper.sleep(think);
        intended = performance.now();
      }
    };
    // Users start one per macrotask: starting a request costs tens of us to ms (connecting,
    // building the request), and 200 of them in one task would hold every response byte that
    // arrives meanwhile, i.e. late timestamps for the first users' first tokens. Between two
    // starts the event loop polls the sockets.
    const running: Promise<void>[] = [];
    for (let i = 0; i < users && !this.stopped; i++) {
      if (i > 0) await nextMacrotask();
      running.push(user(firstUser + i));
    }
    await Promise.all(running);
  }

  /**
   * Open model: iterations start at their scheduled times whatever the target does. When
   * `maxInFlight` requests are outstanding the next iteration waits for a slot (as a wrk2
   * connection does) and its latency still counts from its intended time (corrected E2E); it is
   * `late` if it starts more than lateToleranceMs after that time, and `dropped` if more than
   * maxLatenessMs, or if the shard's duration (plus lateToleranceMs) ends before it could start.
   */
  private async runOpen(
    schedule: ArrivalSchedule,
    startMono: number,
    endMono: number,
    maxInFlight: number,
    knobs: { lateToleranceMs: number; maxLatenessMs: number },
  ): Promise<void> {
    let arrival = schedule.next();
    while (arrival !== null && !this.stopped) {
      const intended = startMono + arrival.atMs;
      let now = performance.now();
      // setTimeout has millisecond granularity: an arrival due within 1 ms is sent now.
      if (intended - now >= 1) {
        await this.sleeper.sleep(intended - now);
        if (this.stopped) break;
      }
      while (this.inFlight >= maxInFlight && !this.stopped) await this.waitForSlot();
      if (this.stopped) break;
      now = performance.now();
      // An iteration due before the end still goes if it can start within the late tolerance.
      if (now >= endMono + knobs.lateToleranceMs) break;
      const lateness = now - intended;
      if (lateness > knobs.maxLatenessMs) {
        this.counts.dropped++;
        this.slotAt(intended).recorder.countDropped();
      } else {
        if (lateness > knobs.lateToleranceMs) {
          this.counts.late++;
          this.slotAt(intended).recorder.countLate();
        }
        void this.fire(intended, arrival.item);
      }
      arrival = schedule.next();
    }
    // What the schedule still held when the duration ended (or the run aborted) was never sent.
    let missed = 0;
    for (; arrival !== null; arrival = schedule.next()) missed++;
    this.counts.dropped += missed;
    if (missed > 0) this.recorder.current.recorder.countDropped(missed);
  }

  /** Adaptive (AIMD, see aimd.controller.ts): a closed model whose number of users the controller sets. */
  private async runAdaptive(
    p: Extract<LoadProfile, { type: 'adaptive' }>,
    endMono: number,
    maxInFlight: number,
  ): Promise<AdaptiveTrace[]> {
    const controller = new AimdController({
      p95BudgetMs: p.p95BudgetMs,
      ...(p.gpuMemoryCeiling === undefined ? {} : { gpuMemoryCeiling: p.gpuMemoryCeiling }),
      initialConcurrency: Math.min(maxInFlight, Math.max(1, shareOf(p.initialConcurrency, this.shard))),
      minConcurrency: Math.min(maxInFlight, Math.max(1, shareOf(p.minConcurrency, this.shard))),
      maxConcurrency: maxInFlight,
      increaseStep: p.increaseStep,
      decreaseFactor: p.decreaseFactor,
    });
    const trace: AdaptiveTrace[] = [];
    const random = new SeededRandom(deriveSeed(p.seed, this.shard.index));
    this.intervalHistogram = newLatencyHistogram();
    // Users by index: a user above the concurrency leaves after its current request; one that is
    // still finishing when the concurrency rises again simply stays (never two users per index).
    const alive = new Map<number, Promise<void>>();
    const isActive = (k: number) => k < controller.current.concurrency;
    const spawn = () => {
      for (let k = 0; k < controller.current.concurrency; k++) {
        if (alive.has(k)) continue;
        const user = this.runClosed(1, endMono, 0, 0, random, isActive, k).finally(() => alive.delete(k));
        alive.set(k, user);
      }
    };
    spawn();
    const t0 = performance.now();
    const interval = setInterval(() => {
      const h = this.intervalHistogram!;
      const p95Ms = h.totalCount > 0 ? h.getValueAtPercentile(95) / 1000 : null;
      h.reset();
      const gpuMemoryUsed = this.options.gpu?.read() ?? null;
      const step = controller.update(p95Ms, gpuMemoryUsed);
      this.inputScale = step.inputScale;
      trace.push({ atMs: performance.now() - t0, p95Ms, gpuMemoryUsed, ...step });
      if (trace.length > ADAPTIVE_TRACE_CAP) trace.shift();
      if (!this.stopped) spawn();
    }, p.intervalMs);
    await this.sleeper.sleep(endMono - performance.now());
    clearInterval(interval);
    await Promise.all(alive.values());
    this.intervalHistogram = null;
    return trace;
  }
}

/** A request's cancellation with its deadline (performance.now() ms) for the shared timeout timer. */
class TimedCancel extends RequestCancel {
  constructor(readonly deadlineMono: number) {
    super();
  }
}

/** 128-bit random trace ids, hex, drawn from a refilled 4 KiB pool (one syscall per 256 ids). */
class TraceIdPool {
  private readonly pool = Buffer.alloc(4096);
  private offset = 4096;

  next(): string {
    if (this.offset === this.pool.length) {
      randomFillSync(this.pool);
      this.offset = 0;
    }
    const id = this.pool.toString('hex', this.offset, this.offset + 16);
    this.offset += 16;
    return id;
  }
}
const traceIds = new TraceIdPool();
