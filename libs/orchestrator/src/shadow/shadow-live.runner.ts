import { createHash } from 'node:crypto';
import type { Bus, Subscription } from '@fathom/bus';
import {
  Detectors,
  Topics,
  consumerGroup,
  envelope,
  shadowRunId,
  type BreakerChange,
  type DetectorSignal,
  type ShadowCampaignInput,
  type ShadowLiveStatus,
  type ShadowRequest,
  type ShadowSample,
  type ShadowWindowReport,
} from '@fathom/contracts';
import { MIN_SAMPLES_PER_GROUP, compareShadowSamples } from './shadow-diff.util';

type LiveSource = Extract<ShadowCampaignInput['source'], { type: 'live' }>;

/** What the runner needs from the service: replay one (already sampled) request, store its sample. */
export interface LiveRunnerDeps {
  readonly bus: Bus;
  /** Redacts, replays against the three targets, stores; resolves with the sample (null: not stored). */
  replay(request: ShadowRequest, signal: AbortSignal): Promise<ShadowSample | null>;
  /** Stores the live status as the campaign's report. */
  publish(status: ShadowLiveStatus, samples: number): Promise<void>;
  /** Deletes all but the newest `keep` stored samples; resolves with how many went. */
  prune(keep: number): Promise<number>;
  /** Starts the linked campaign (`onRegression.campaignId`): the run started or the open run it joined; null without one. */
  startLinked(reason: string): Promise<string | null>;
  log(message: string): void;
}

/** Windows kept in the live status (one hour at the default 60 s window). */
const WINDOWS_KEPT = 60;
/** Hours kept in the live status. */
const HOURS_KEPT = 24;
/** Samples an hour's report is computed from (reservoir); bounded memory however long it runs. */
const HOUR_RESERVOIR = 5000;
/** Consecutive candidate failures that open its breaker, and how long it stays open (ms). */
const BREAKER_FAILURES = 5;
const BREAKER_COOLDOWN_MS = 10_000;
/**
 * Stored samples are pruned back to `keepSamples` once a tenth more were added, at most this
 * many: at most keepSamples + min(100, keepSamples / 10) samples, and the replays in flight,
 * are stored at any time.
 */
const PRUNE_EVERY_MAX = 100;
/**
 * While the analyzer's breaker on the candidate is open or half-open: replays admitted per window
 * and group (endpoint, intent), twice what a group needs to be judged (in-flight replays that end
 * in the next window, failed ones), and groups probed per window. The candidate sees at most
 * 10 x 8 requests a window instead of the campaign's rate.
 */
const ANALYZER_PROBES_PER_GROUP = 2 * MIN_SAMPLES_PER_GROUP;
const ANALYZER_PROBED_GROUPS = 8;

/**
 * An always-on shadow campaign fed by live traffic. Invariants:
 * - requests in flight never exceed the campaign's `concurrency`, and replays started never
 *   exceed `maxRatePerSec` (token bucket, burst = one second's worth): the rest is shed and
 *   counted, never queued, so production's copies cannot pile up in Fathom;
 * - the candidate's breaker opens after 5 consecutive failures and sheds for 10 s (then one
 *   half-open replay decides);
 * - the analyzer's breaker on the candidate (opened by this campaign's sustained
 *   `shadow-regression` signals) sheds too, counted under `shed.analyzerBreaker`:
 *
 *   | analyzer breaker   | replays admitted (within the caps above)              |
 *   |--------------------|-------------------------------------------------------|
 *   | closed             | all                                                   |
 *   | open, half-open    | a probe trickle: 10 per group, 8 groups, per window   |
 *
 *   Open is not silence: the analyzer has no clock for shadow breakers, it moves to half-open
 *   when a window's signal arrives after its open time, and judges the half-open probes by
 *   windows, so a window must still be judged (a group with 5 samples) or the breaker never
 *   closes. Half-open gets the same trickle, not the whole rate: the analyzer closes after
 *   clean windows whatever their size, and a candidate still regressed reopens it at the first
 *   window, having seen a trickle. The analyzer keeps these breakers in the store, so one
 *   restarted (or taking the campaign's partition over) goes on from the state this runner
 *   last heard, and announces no change it did not make;
 * - after `stop()` no new replay starts and those in flight are aborted: mirroring stops at
 *   once (the kill switch);
 * - memory is bounded: the current window's samples, a 5,000-sample reservoir for the hour,
 *   60 windows and 24 hours of aggregates; so is storage: stored samples are pruned back to
 *   `keepSamples` (see PRUNE_EVERY_MAX), the report holds those bounded lists.
 */
export class ShadowLiveRunner {
  private subscription: Subscription | null = null;
  private breakerSubscription: Subscription | null = null;
  private readonly abort = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();
  private tokens: number;
  private refilledAt = performance.now();
  private windowTimer: NodeJS.Timeout | null = null;
  private window: ShadowSample[] = [];
  private windowStartedAt = Date.now();
  private hour: ShadowSample[] = [];
  private hourSeen = 0;
  private hourStartedAt = Date.now();
  private sinceprune = 0;
  private consecutiveFailures = 0;
  private breakerOpenUntil = 0;
  private regressedInARow = 0;
  private stopped = false;
  /** Ids of the latest analyzer breaker changes heard (a redelivered one is skipped). */
  private heardBreakerChanges: string[] = [];
  private status: {
    offered: number;
    replayed: number;
    shed: { sampled: number; rate: number; concurrency: number; breaker: number; analyzerBreaker: number };
    tier: 'ok' | 'regressed';
    analyzerBreaker: NonNullable<ShadowLiveStatus['analyzerBreaker']>;
    linkedRuns: string[];
    windows: ShadowWindowReport[];
    hours: ShadowWindowReport[];
  } = {
    offered: 0,
    replayed: 0,
    shed: { sampled: 0, rate: 0, concurrency: 0, breaker: 0, analyzerBreaker: 0 },
    tier: 'ok',
    analyzerBreaker: { state: 'closed', changes: [] },
    linkedRuns: [],
    windows: [],
    hours: [],
  };
  private stored = 0;
  private readonly pruneEvery: number;
  /** Probe replays admitted this window per group while the analyzer's breaker is not closed. */
  private probes = new Map<string, number>();

  /**
   * `resumed`: the report an earlier runner of this campaign last published (an orchestrator
   * restarted, or another one taking the campaign over): its counters, tier, analyzer breaker,
   * linked runs, windows and hours go on from there, and so does the run of regressed windows
   * (counted back from the stored windows). Not restored, so not exact: what happened after that
   * report (at most one window: the partial window's samples and counts), the hour in progress
   * (its aggregate covers the samples from the resume on; the hour still ends on the hour
   * boundary of the stored ones), the candidate breaker's failure streak and the token bucket
   * (both start afresh: closed, full).
   */
  constructor(
    private readonly id: string,
    private readonly config: ShadowCampaignInput & { source: LiveSource },
    private readonly deps: LiveRunnerDeps,
    resumed?: { status: ShadowLiveStatus; samples: number; createdAt: number },
  ) {
    this.tokens = config.source.maxRatePerSec;
    this.pruneEvery = Math.min(PRUNE_EVERY_MAX, Math.ceil(config.source.keepSamples / 10));
    if (resumed) this.resume(resumed.status, resumed.samples, resumed.createdAt);
  }

  private resume(status: ShadowLiveStatus, samples: number, createdAt: number): void {
    this.status = {
      offered: status.offered,
      replayed: status.replayed,
      shed: { ...status.shed, analyzerBreaker: status.shed.analyzerBreaker ?? 0 },
      tier: status.tier,
      analyzerBreaker: status.analyzerBreaker ?? { state: 'closed', changes: [] },
      linkedRuns: [...status.linkedRuns],
      windows: status.windows.slice(-WINDOWS_KEPT),
      hours: status.hours.slice(-HOURS_KEPT),
    };
    this.stored = samples;
    // judge() runs on windows with a group of enough samples only: the others neither extend
    // nor break the run.
    for (const window of [...status.windows].reverse()) {
      if (!window.groups.some((g) => g.samples >= MIN_SAMPLES_PER_GROUP)) continue;
      if (!window.regressed) break;
      this.regressedInARow++;
    }
    this.hourStartedAt = status.hours.at(-1)?.endedAt ?? createdAt;
  }

  get comparesSimilarity(): boolean {
    return this.config.embeddings !== undefined;
  }

  async start(): Promise<void> {
    // One group per campaign: every campaign sees every offered request once, whatever the
    // number of orchestrators sharing the topic's partitions.
    this.subscription = await this.deps.bus.subscribe(
      Topics.shadowRequest,
      { group: consumerGroup('orchestrator', Topics.shadowRequest, this.id) },
      (request) => this.offer(request),
    );
    // The analyzer's verdict on this campaign's signals: for the report, and it sheds.
    this.breakerSubscription = await this.deps.bus.subscribe(
      Topics.breaker,
      { group: consumerGroup('orchestrator', Topics.breaker, `shadow-${this.id}`) },
      (change) => this.onBreaker(change),
    );
    this.windowTimer = setInterval(() => void this.closeWindow(), this.config.source.windowMs);
    this.windowTimer.unref();
  }

  /** The kill switch: no replay starts after this returns, and those in flight are aborted. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort(new Error('shadow campaign stopped'));
    if (this.windowTimer) clearInterval(this.windowTimer);
    await this.subscription?.close();
    await this.breakerSubscription?.close();
    await Promise.allSettled(this.inFlight);
    await this.closeWindow();
  }

  snapshot(): ShadowLiveStatus {
    return {
      ...this.status,
      shed: { ...this.status.shed },
      linkedRuns: [...this.status.linkedRuns],
      analyzerBreaker: { ...this.status.analyzerBreaker, changes: [...this.status.analyzerBreaker.changes] },
      windows: [...this.status.windows],
      hours: [...this.status.hours],
      candidateBreaker: this.breakerState(),
    };
  }

  private onBreaker(change: BreakerChange): void {
    if (change.runId !== shadowRunId(this.id)) return;
    // An analyzer that crashed after publishing a change and before storing its breaker publishes
    // it again, with the same id (derived from the judged signal's): heard once, counted once.
    if (this.heardBreakerChanges.includes(change.id)) return;
    this.heardBreakerChanges = [...this.heardBreakerChanges, change.id].slice(-50);
    const { emittedAt: at, from, to, reason } = change;
    this.status.analyzerBreaker = {
      state: to,
      changes: [...this.status.analyzerBreaker.changes, { at, from, to, reason }].slice(-50),
    };
  }

  /** Called for every message of the topic; returns at once (the replay runs on its own). */
  private offer(request: ShadowRequest): void {
    if (this.stopped) return;
    if (request.campaignId !== undefined && request.campaignId !== this.id) return;
    this.status.offered++;
    if (!sampled(request.id, this.config.source.sampleRate)) return void this.status.shed.sampled++;
    if (this.inFlight.size >= this.config.concurrency) return void this.status.shed.concurrency++;
    const group = `${request.endpoint}\u0000${request.intent ?? 'unlabelled'}`;
    if (!this.analyzerAdmits(group)) return void this.status.shed.analyzerBreaker++;
    if (!this.takeToken()) return void this.status.shed.rate++;
    const breaker = this.breakerState();
    if (breaker === 'open' || (breaker === 'half-open' && this.inFlight.size > 0))
      return void this.status.shed.breaker++;
    if (this.status.analyzerBreaker.state !== 'closed')
      this.probes.set(group, (this.probes.get(group) ?? 0) + 1);
    const replay = this.replay(request).finally(() => this.inFlight.delete(replay));
    this.inFlight.add(replay);
  }

  private async replay(request: ShadowRequest): Promise<void> {
    let sample: ShadowSample | null;
    try {
      sample = await this.deps.replay(request, this.abort.signal);
    } catch (error) {
      if (!this.stopped) this.deps.log(`shadow ${this.id}: replay failed: ${(error as Error).message}`);
      return;
    }
    if (!sample || this.stopped) return;
    this.status.replayed++;
    this.stored++;
    if (sample.candidate.ok) {
      this.consecutiveFailures = 0;
      this.breakerOpenUntil = 0;
    } else if (++this.consecutiveFailures >= BREAKER_FAILURES) {
      this.breakerOpenUntil = Date.now() + BREAKER_COOLDOWN_MS;
      this.consecutiveFailures = 0;
      this.deps.log(`shadow ${this.id}: candidate failing, breaker open for ${BREAKER_COOLDOWN_MS} ms`);
    }
    this.window.push(sample);
    this.addToHour(sample);
    if (++this.sinceprune >= this.pruneEvery) {
      this.sinceprune = 0;
      // Less what went, not clamped to keepSamples: replays that ended while the delete ran
      // are stored beyond it. A failed delete costs one round (the next catches up).
      const deleted = await this.deps.prune(this.config.source.keepSamples).catch((error: Error) => {
        this.deps.log(`shadow ${this.id}: old samples not pruned: ${error.message}`);
        return 0;
      });
      this.stored -= deleted;
    }
  }

  /** Whether the analyzer's breaker lets a replay of `group` through now (see the class doc). */
  private analyzerAdmits(group: string): boolean {
    if (this.status.analyzerBreaker.state === 'closed') return true;
    const admitted = this.probes.get(group);
    if (admitted === undefined) return this.probes.size < ANALYZER_PROBED_GROUPS;
    return admitted < ANALYZER_PROBES_PER_GROUP;
  }

  private takeToken(): boolean {
    const now = performance.now();
    const rate = this.config.source.maxRatePerSec;
    this.tokens = Math.min(rate, this.tokens + ((now - this.refilledAt) / 1000) * rate);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private breakerState(): 'closed' | 'open' | 'half-open' {
    if (this.breakerOpenUntil === 0) return 'closed';
    return Date.now() < this.breakerOpenUntil ? 'open' : 'half-open';
  }

  /** Reservoir sampling (Vitter's R) so the hour's report stays bounded. */
  private addToHour(sample: ShadowSample): void {
    this.hourSeen++;
    if (this.hour.length < HOUR_RESERVOIR) this.hour.push(sample);
    else {
      const j = Math.floor(Math.random() * this.hourSeen);
      if (j < HOUR_RESERVOIR) this.hour[j] = sample;
    }
  }

  private async closeWindow(): Promise<void> {
    const now = Date.now();
    const report = windowReport(this.window, this.windowStartedAt, now);
    this.window = [];
    this.windowStartedAt = now;
    this.probes = new Map();
    this.status.windows = [...this.status.windows, report].slice(-WINDOWS_KEPT);
    if (now - this.hourStartedAt >= 3_600_000) {
      this.status.hours = [...this.status.hours, windowReport(this.hour, this.hourStartedAt, now)].slice(
        -HOURS_KEPT,
      );
      this.hour = [];
      this.hourSeen = 0;
      this.hourStartedAt = now;
    }
    // A window without a group of enough samples is no evidence either way: it neither
    // regresses, nor clears the tier, nor probes the analyzer's breaker.
    if (report.groups.some((g) => g.samples >= MIN_SAMPLES_PER_GROUP)) {
      await this.judge(report);
      await this.signal(report);
    }
    await this.deps.publish(this.snapshot(), this.stored);
  }

  /** Publishes the window's verdict to the analyzer; a bus that refuses it costs the signal, not the campaign. */
  private async signal(report: ShadowWindowReport): Promise<void> {
    const signal = shadowSignal(
      this.id,
      this.config.candidate.baseUrl,
      report,
      this.regressedInARow,
      this.config.onRegression.windows,
    );
    await this.deps.bus
      .publish(Topics.semanticSignal, signal)
      .catch((error: Error) => this.deps.log(`shadow ${this.id}: signal not published: ${error.message}`));
  }

  /** A sustained regression (`onRegression.windows` in a row) changes the tier and may start the linked campaign. */
  private async judge(report: ShadowWindowReport): Promise<void> {
    this.regressedInARow = report.regressed ? this.regressedInARow + 1 : 0;
    if (!report.regressed) {
      this.status.tier = 'ok';
      return;
    }
    if (this.regressedInARow < this.config.onRegression.windows || this.status.tier === 'regressed') return;
    this.status.tier = 'regressed';
    const what = report.groups
      .flatMap((g) =>
        g.differences.map(
          (d) =>
            `${g.endpoint} ${g.intent}: ${d.metric} +${round(d.candidateDifference)} (noise ${round(d.noiseFloor)})`,
        ),
      )
      .join('; ');
    const reason = `shadow ${this.id}: candidate regressed in ${this.regressedInARow} windows: ${what}`;
    this.deps.log(reason);
    if (this.stopped) return;
    const runId = await this.deps.startLinked(reason);
    if (runId) this.status.linkedRuns = [...this.status.linkedRuns, runId].slice(-100);
  }
}

/**
 * The window's `shadow-regression` signal for the analyzer: per metric, the largest candidate
 * difference and noise floor over the window's groups.
 */
export function shadowSignal(
  id: string,
  candidateUrl: string,
  report: ShadowWindowReport,
  regressedInARow: number,
  sustainedAfter: number,
): DetectorSignal {
  const figures: Record<string, number> = { samples: report.samples, regressedInARow };
  const beyond = new Set<string>();
  for (const g of report.groups)
    for (const m of g.metrics) {
      figures[`${m.metric}.difference`] = Math.max(
        figures[`${m.metric}.difference`] ?? -Infinity,
        m.candidateDifference,
      );
      figures[`${m.metric}.noise`] = Math.max(figures[`${m.metric}.noise`] ?? -Infinity, m.noiseFloor);
      if (m.beyondNoise) beyond.add(m.metric);
    }
  const metrics = [...beyond].sort();
  const severity = !report.regressed ? 'info' : regressedInARow >= sustainedAfter ? 'critical' : 'warning';
  const what = metrics.map(
    (m) => `${m} +${round(figures[`${m}.difference`])} (noise ${round(figures[`${m}.noise`])})`,
  );
  return {
    ...envelope(id, shadowRunId(id), report.endedAt),
    kind: 'detector',
    detector: Detectors.shadowRegression,
    requestId: null,
    severity,
    message: report.regressed
      ? `shadow candidate beyond the noise floor in ${regressedInARow} window(s) in a row: ${what.join(', ')}`
      : `shadow candidate within the noise floor over ${report.samples} samples`,
    figures,
    labels: { target: candidateUrl.slice(0, 300), metrics: metrics.join(',').slice(0, 300) },
  };
}

function windowReport(
  samples: readonly ShadowSample[],
  startedAt: number,
  endedAt: number,
): ShadowWindowReport {
  const groups = samples.length > 0 ? compareShadowSamples(samples) : [];
  return {
    startedAt,
    endedAt,
    samples: samples.length,
    groups,
    regressed: groups.some((g) => g.differences.length > 0),
  };
}

/** Deterministic per request id, so every orchestrator (and a retry) decides the same. */
function sampled(id: string, rate: number): boolean {
  if (rate >= 1) return true;
  return createHash('sha1').update(id).digest().readUInt32BE(0) / 0x1_0000_0000 < rate;
}

const round = (x: number) => Math.round(x * 1000) / 1000;
