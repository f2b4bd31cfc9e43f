import { randomFillSync } from 'node:crypto';
import {
  effectiveSlo,
  secretText,
  type AdversarialProbe,
  type CampaignSpec,
  type LoadProfile,
  type LoadSegment,
  type RequestRecord,
  type ShardCounts,
  type StepTally,
} from '@fathom/contracts';
import { UseLiteEmbedder, type Embedder } from '@fathom/semantic';
import * as hdr from 'hdr-histogram-js';
import type { GpuMemoryGauge } from '../adaptive/gpu-memory.gauge';
import { PromptSource, promptItemFromText } from '../dataset/prompt.source';
import { chatLogprobsClient } from '../driver/chat-logprobs.client';
import { probeAdversarialEntropy } from '../perturb/adversarial-entropy.perturbation';
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
import { PhasedRecorder, type PhaseSlot } from '../measure/phased.recorder';
import { SloAbortWatch } from '../threshold/slo-abort.watch';
import { GeneratorHealthMonitor, clientBoundReason } from '../measure/generator-health';
import { RecordBudget } from '../measure/record-budget';
import { WindowEncoder } from '../measure/window.encoder';
import type { WindowSnapshot } from '../measure/window.snapshot';
import { replaySchedule, scheduleFor } from '../profile/arrival.schedule';
import { intentPathsOf, loadReplay } from '../profile/replay.loader';
import { TracePromptBuilder } from '../dataset/trace-prompt.builder';
import { shareOf } from '../profile/shard-share.util';
import { SeededRandom, deriveSeed } from '../random/seeded-random';
import { Sleeper } from './sleeper';
import { createDriver, promptSourceOf } from './driver.factory';
import { ShardAccounting } from './shard.accounting';
import { InFlightList, type InFlightNode } from './in-flight.list';
import { runSweep, type StepTag, type SweepResult } from './sweep.executor';
import { runAdaptive, type AdaptiveTrace } from './adaptive.executor';
import { runClosed } from './closed.executor';
import type { AdaptiveExecutorContext } from './executor.context';
import { runOpen } from './open.executor';

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
  /** Sentence embeddings of the adversarial-entropy KL bound (default: USE lite, loaded on use). */
  embedder?: Embedder;
  /**
   * A request its driver has not ended this long after its cancellation (timeout or abort) is
   * ended by the engine (default 2000 ms), so a driver that ignores its cancel cannot hang a run.
   */
  settleGraceMs?: number;
}

export type { AdaptiveTrace } from './adaptive.executor';

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
  /** Steps scenarios: each step's runs, skips, failures, SLA misses and latency over the shard. */
  steps: Record<string, StepTally>;
  /** Sweep: the measured synchronous and throughput rates (req/s of this shard) and the rates run. */
  sweep?: SweepResult;
  /** Why the load ended: duration, abort, or the campaign SLO failing under `slo.abortOnFail`. */
  endReason: 'duration' | 'aborted' | 'slo-failed';
  /** With `slo-failed`: the thresholds that failed. */
  endDetail?: string;
  /** Adaptive: the controller's last steps (at most 600). */
  adaptive?: AdaptiveTrace[];
  /** `perturbation: adversarial-entropy`: the prompts probed before the load, and their variants. */
  adversarial?: AdversarialProbe[];
}

const SETTLE_GRACE_MS = 2_000;
/** The settle guard looks again at most this often (it walks the in-flight requests). */
const SETTLE_CHECK_MIN_MS = 250;
/** `driver.close()` is not awaited longer than this at the end of the shard. */
const DRIVER_CLOSE_MS = 5_000;

const CLOSED_DEFAULT: LoadProfile = { type: 'closed', seed: 1, thinkTimeMs: 0, thinkTimeJitterMs: 0 };

/** Runs shard `shard.index` of `shard.count` of a campaign until its duration ends or `signal` aborts. */
export async function runShard(options: RunShardOptions): Promise<ShardResult> {
  const engine = new ShardRun(options);
  return engine.run();
}

class ShardRun implements AdaptiveExecutorContext {
  private readonly spec: CampaignSpec;
  private readonly profile: LoadProfile;
  readonly shard: { index: number; count: number };
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
  readonly sleeper = new Sleeper();
  /**
   * In-flight requests in start order. Every request has the same timeout, so this is also
   * deadline order: one timer, armed for the oldest deadline, serves them all (no timer per
   * request).
   */
  private readonly cancels = new InFlightList<TimedCancel>();
  private timeoutTimer: ReturnType<typeof setTimeout> | null = null;
  /** Ends requests whose driver ignored their cancellation (see `settleGraceMs`). */
  private settleTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly settleGraceMs: number;
  private readonly shardHex: string;
  /** Which finished requests become records; adapts to `health` once a window. */
  private readonly records: RecordBudget;
  private health: GeneratorHealthMonitor | null = null;
  private readonly accounting: ShardAccounting;
  private readonly gate: (path: string) => boolean;
  private readonly windowMs: number;
  private readonly contentCapChars: number;
  private driver!: RequestDriver;
  private source: PromptSource | null = null;
  private tokenizer: TextTokenizer = O200K_BASE;
  stopped = false;
  inFlight = 0;
  private slotWaiter: (() => void) | null = null;
  private drainWaiter: (() => void) | null = null;
  private seq = 0;
  private inputScale = 1;
  private readonly epoch0 = Date.now();
  private readonly mono0 = performance.now();
  /** Latency tap for the adaptive controller (successful requests of the current interval). */
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
    steps: {},
    endReason: 'duration',
  };

  constructor(private readonly options: RunShardOptions) {
    this.spec = options.spec;
    this.profile = options.spec.load.profile ?? CLOSED_DEFAULT;
    this.shard = options.shard;
    this.windowMs = options.windowMs ?? 1000;
    this.settleGraceMs = options.settleGraceMs ?? SETTLE_GRACE_MS;
    this.recorder = new PhasedRecorder(this.shard.index, this.windowMs, {
      index: 0,
      kind: 'run',
      segment: 'measured',
    });
    const abortOnFail = options.spec.slo.abortOnFail;
    this.sloWatch = abortOnFail
      ? new SloAbortWatch(
          effectiveSlo(options.spec.slo, options.spec.scenario),
          abortOnFail === true ? 0 : abortOnFail.delayMs,
        )
      : null;
    this.encoder = new WindowEncoder({
      deliver: (window) => this.deliverWindow(window),
      recycle: (histograms) => this.recorder.recycle(histograms),
    });
    const sampling = new SeededRandom(deriveSeed(this.profile.seed, 1_000_003 + this.shard.index));
    const fixedRate = this.spec.load.recordSampleRate;
    this.records =
      fixedRate !== undefined
        ? RecordBudget.fixed(fixedRate, () => sampling.next())
        : RecordBudget.forShard(this.spec.load, this.shard.count);
    this.gate = options.gate ?? (() => true);
    this.contentCapChars = options.contentCapChars ?? 2048;
    this.accounting = new ShardAccounting({
      counts: this.counts,
      shardIndex: this.shard.index,
      sink: options.sink,
      records: this.records,
      contentCapChars: this.contentCapChars,
      epochAt: (mono) => this.epochAt(mono),
    });
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
    if (scenario.type === 'chat' && scenario.perturbation?.kind === 'adversarial-entropy')
      this.source = await this.withAdversarialVariants(this.source, scenario, scenario.perturbation);
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
    this.driver = await createDriver(
      this.spec,
      { connections: maxInFlight, contentCapChars: this.contentCapChars, countTokens: this.tokenizer.count },
      this.source,
    );
    // Set-up outside every request's timing (e.g. a vector collection); a failure fails the shard.
    // An abort meanwhile is not held up by it (a hanging target answers each call only at its
    // timeout): the shard ends as aborted, nothing sent.
    try {
      await unlessAborted(this.driver.prepare?.(), signal);
    } catch (error) {
      // What the driver opened before it failed (pools, channels) goes with it.
      await this.driver.close().catch(() => undefined);
      throw error;
    }

    const onAbort = () => {
      this.counts.endReason = 'aborted';
      this.stop(true);
    };
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });

    this.health = new GeneratorHealthMonitor(maxInFlight);
    // Windows tile the run: each ends where the next starts, with its measured length. Ticks aim
    // at a fixed grid (first start + k * windowMs) rather than an interval, which drifts by each
    // tick's lateness: a drifted or late window, labelled with the nominal length, landed in the
    // report's next second and left an empty one behind (seen on every run whose first tick was
    // late, a second in which nothing seemed to be measured). A tick a stall delayed past half a
    // window closes one longer window; the grid is not caught up with empty ones.
    const firstWindowMono = performance.now();
    let windowStartMono = firstWindowMono;
    let ticker: ReturnType<typeof setTimeout>;
    const tick = () => {
      const now = performance.now();
      this.emitWindow(windowStartMono, Math.max(1, Math.round(now - windowStartMono)));
      windowStartMono = now;
      const next =
        firstWindowMono + (Math.round((now - firstWindowMono) / this.windowMs) + 1) * this.windowMs;
      ticker = setTimeout(tick, Math.max(1, next - performance.now()));
    };
    ticker = setTimeout(tick, this.windowMs);

    const startMono = performance.now();
    const endMono = startMono + this.spec.load.durationMs;
    this.runStartMono = startMono;
    this.beginStep({ index: 0, kind: 'run' }, startMono, endMono);
    try {
      const p = this.profile;
      switch (p.type) {
        case 'closed':
          await runClosed(this, {
            users: maxInFlight,
            endMono,
            thinkTimeMs: p.thinkTimeMs,
            thinkTimeJitterMs: p.thinkTimeJitterMs,
            random: new SeededRandom(deriveSeed(p.seed, this.shard.index)),
          });
          break;
        case 'constant-rate':
        case 'poisson':
        case 'gamma':
        case 'ramping-rate':
          await runOpen(this, {
            schedule: scheduleFor(p, this.spec.load.durationMs, this.shard),
            startMono,
            endMono,
            maxInFlight,
            lateToleranceMs: p.lateToleranceMs,
            maxLatenessMs: p.maxLatenessMs,
          });
          break;
        case 'replay':
          await runOpen(this, {
            schedule: replaySchedule(
              replayArrivals ?? [],
              p.speed,
              this.spec.load.durationMs,
              this.shard,
              (a) => traceItems!.item(a),
            ),
            startMono,
            endMono,
            maxInFlight,
            lateToleranceMs: p.lateToleranceMs,
            maxLatenessMs: p.maxLatenessMs,
          });
          break;
        case 'sweep':
          this.counts.sweep = await runSweep(p, this.sweepContext(p, maxInFlight), {
            durationMs: this.spec.load.durationMs,
            maxInFlight,
            shard: this.shard,
          });
          break;
        case 'adaptive':
          this.counts.adaptive = await runAdaptive(this, p, endMono, maxInFlight);
          break;
      }
      await this.drained();
    } finally {
      clearTimeout(ticker);
      if (this.timeoutTimer !== null) clearTimeout(this.timeoutTimer);
      this.timeoutTimer = null;
      if (this.settleTimer !== null) clearTimeout(this.settleTimer);
      this.settleTimer = null;
      signal.removeEventListener('abort', onAbort);
      this.emitWindow(windowStartMono, Math.max(1, Math.round(performance.now() - windowStartMono)));
      this.health.close();
      this.encoder.drain();
      await closeWithin(this.driver, DRIVER_CLOSE_MS);
    }
    return this.counts;
  }

  /**
   * Probes prompts for entropy peaks and adds the KL-bounded variants to the load's prompts (after
   * the originals); the probes are outside the load's timing and figures, and listed in the result.
   */
  private async withAdversarialVariants(
    source: PromptSource,
    scenario: Extract<CampaignSpec['scenario'], { type: 'chat' }>,
    config: Extract<NonNullable<typeof scenario.perturbation>, { kind: 'adversarial-entropy' }>,
  ): Promise<PromptSource> {
    const signal = this.options.signal;
    const send = chatLogprobsClient(
      { baseUrl: this.spec.target.baseUrl, apiKey: secretText(this.spec.target.apiKey) },
      scenario,
      { topLogprobs: config.topLogprobs, timeoutMs: this.spec.load.requestTimeoutMs, signal },
    );
    const { probes, sendable } = await probeAdversarialEntropy(
      source.items.map((item) => item.messages.at(-1)?.content ?? ''),
      config,
      {
        complete: (prompt) => (signal.aborted ? Promise.reject(new Error('run aborted')) : send(prompt)),
        embedder: this.options.embedder ?? new UseLiteEmbedder(),
      },
      this.shard.index,
    );
    this.counts.adversarial = probes;
    if (sendable.length === 0) return source;
    const extra = sendable.map((text) => promptItemFromText(text, scenario.system, this.tokenizer));
    return new PromptSource([...source.items, ...extra], this.shard.index, this.tokenizer);
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
    const health = this.health?.sample(this.accounting.takeRecordsInWindow(), windowMs, e2eP50Ms) ?? null;
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
      runClosed: (users, endMono, random) =>
        runClosed(this, { users, endMono, thinkTimeMs: 0, thinkTimeJitterMs: 0, random }),
      runOpen: (schedule, startMono, endMono) =>
        runOpen(this, {
          schedule,
          startMono,
          endMono,
          maxInFlight,
          lateToleranceMs: p.lateToleranceMs,
          maxLatenessMs: p.maxLatenessMs,
        }),
      drained: () => this.drained(),
    };
  }

  countLate(intendedMono: number): void {
    this.counts.late++;
    this.slotAt(intendedMono).recorder.countLate();
  }

  countDropped(intendedMono: number): void {
    this.counts.dropped++;
    this.slotAt(intendedMono).recorder.countDropped();
  }

  countMissed(n: number): void {
    this.counts.dropped += n;
    if (n > 0) this.recorder.current.recorder.countDropped(n);
  }

  tapLatency(metric: 'ttft' | 'e2e'): hdr.Histogram {
    return this.accounting.tapLatency(metric);
  }

  untapLatency(): void {
    this.accounting.untapLatency();
  }

  readGpuMemory(): number | null {
    return this.options.gpu?.read() ?? null;
  }

  setInputScale(scale: number): void {
    this.inputScale = scale;
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
    if (aborted) {
      for (const cancel of this.cancels) cancel.abort(new RunAborted());
      this.armSettleGuard();
    }
  }

  /** Arms the settle guard for the earliest cancelled request its driver has not ended yet. */
  private armSettleGuard(): void {
    if (this.settleTimer !== null) return;
    let first = Infinity;
    for (const cancel of this.cancels)
      if (cancel.aborted && !cancel.forced && cancel.abortedMono < first) first = cancel.abortedMono;
    if (first === Infinity) return;
    const wait = Math.max(SETTLE_CHECK_MIN_MS, Math.ceil(first + this.settleGraceMs - performance.now()));
    this.settleTimer = setTimeout(() => this.endOverdue(), wait);
  }

  /**
   * Ends every request cancelled more than `settleGraceMs` ago whose driver has not ended it
   * (a driver bug: drivers end a request at once when cancelled), with the cancellation's class.
   */
  private endOverdue(): void {
    this.settleTimer = null;
    const now = performance.now();
    for (const cancel of this.cancels) {
      if (!cancel.aborted || cancel.forced || cancel.abortedMono + this.settleGraceMs > now) continue;
      const reason = cancel.reason!;
      cancel.end({
        status: 0,
        e2eMs: now - cancel.startMono,
        ttftMs: null,
        chunkOffsetsMs: [],
        errorClass: reason instanceof RunAborted ? 'aborted' : 'timeout',
        errorMessage: `${reason.message}; the driver had not ended the request ${this.settleGraceMs} ms later, so the engine did`,
        inputTokensClient: cancel.inputTokensClient,
        outputTokensClient: 0,
        usage: null,
        content: '',
        finishReason: null,
      });
    }
    this.armSettleGuard();
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
    this.armSettleGuard();
  }

  private drained(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drainWaiter = resolve));
  }

  waitForSlot(): Promise<void> {
    return new Promise((resolve) => (this.slotWaiter = resolve));
  }

  /** Sends one iteration intended at `intendedMono`; resolves when it has finished and been recorded. */
  async fire(intendedMono: number, planned?: PromptItem): Promise<DriverOutcome> {
    const item: PromptItem = planned ?? this.source!.next(this.inputScale);
    const seq = ++this.seq;
    const requestId = `${this.options.runId}-${this.shard.index}-${seq}`;
    const startMono = performance.now();
    // Counted in the phase it started in (by its intended time), whenever it ends.
    const slot = this.slotAt(Math.min(intendedMono, startMono), true);
    slot.inFlight++;
    const cancel = new TimedCancel(
      startMono,
      startMono + this.spec.load.requestTimeoutMs,
      item.inputTokensClient,
    );
    this.cancels.add(cancel);
    this.armTimeout();
    this.inFlight++;
    this.health?.observeSend(startMono - intendedMono, this.inFlight);
    const spanId = this.shardHex + seq.toString(16).padStart(12, '0');
    const traceId = traceIds.next();
    let outcome: DriverOutcome;
    try {
      outcome = await cancel.settledBy(
        this.driver.execute({
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
        }),
      );
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
    this.accounting.account(outcome, requestId, traceId, spanId, intendedMono, startMono, item, slot);
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
}

/**
 * A request's cancellation with its deadline (performance.now() ms) for the shared timeout timer,
 * and the engine's way to end the request when its driver does not (see `settleGraceMs`).
 */
class TimedCancel extends RequestCancel implements InFlightNode<TimedCancel> {
  listPrev: TimedCancel | null = null;
  listNext: TimedCancel | null = null;
  /** performance.now() of the cancellation; 0 until cancelled. */
  abortedMono = 0;
  /** True once the engine ended the request itself. */
  forced = false;
  private resolve: ((outcome: DriverOutcome) => void) | null = null;

  constructor(
    readonly startMono: number,
    readonly deadlineMono: number,
    readonly inputTokensClient: number,
  ) {
    super();
  }

  override abort(reason: RequestTimeout | RunAborted): void {
    if (this.aborted) return;
    this.abortedMono = performance.now();
    super.abort(reason);
  }

  /** The driver's outcome, or the engine's if `end` comes first. */
  settledBy(execution: Promise<DriverOutcome>): Promise<DriverOutcome> {
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      execution.then(resolve, reject);
    });
  }

  end(outcome: DriverOutcome): void {
    this.forced = true;
    this.resolve?.(outcome);
  }
}

/** Resolves when `work` does or when `signal` aborts, whichever comes first; rejects as `work` does. */
function unlessAborted(work: Promise<void> | undefined, signal: AbortSignal): Promise<void> {
  if (work === undefined || signal.aborted) {
    work?.catch(() => undefined);
    return Promise.resolve();
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined); // abandoned: its failure no longer matters
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Closes a driver, waiting at most `ms` for it (a driver that never closes cannot hold the shard). */
async function closeWithin(driver: RequestDriver, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    driver.close().catch(() => undefined),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
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
