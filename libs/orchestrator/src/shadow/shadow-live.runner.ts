import { createHash } from 'node:crypto';
import type { Bus, Subscription } from '@fathom/bus';
import type { StoredShadowSample } from '@fathom/storage';
import {
  Detectors,
  Topics,
  consumerGroup,
  envelope,
  shadowRunId,
  type BreakerChange,
  type DetectorSignal,
  type ShadowCampaignInput,
  type ShadowLiveCheckpoint,
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
  /** Redacts, replays against the three targets, stores; resolves with the stored sample (null: not stored). */
  replay(request: ShadowRequest, signal: AbortSignal): Promise<StoredShadowSample | null>;
  /** Stores the live status as the campaign's report. */
  publish(status: ShadowLiveStatus, samples: number): Promise<void>;
  /**
   * The campaign's stored samples with a seq above `afterSeq`, oldest first: at most `limit`,
   * the newest or a uniform random choice; `total`: how many there are.
   */
  storedAfter(
    afterSeq: number,
    limit: number,
    pick: 'newest' | 'random',
  ): Promise<{ total: number; samples: StoredShadowSample[] }>;
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
 * The status is published at least this often (ms) while anything changes, not only when a
 * window closes (60 s by default): a crash loses at most this long of counts.
 */
const CHECKPOINT_MS = 5000;
/**
 * Samples of the window in progress read back on resume, the newest: a window holds far fewer
 * at the default rate and window (600), and each group's medians need only a few.
 */
const RESUMED_WINDOW_MAX = 10_000;
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
  /** Epoch ms (wall clock: it is published and may be read by another replica); 0: closed. */
  private breakerOpenUntil = 0;
  /** Highest seq of the samples counted so far, at the last window's close, at the hour's start. */
  private lastSeq = 0;
  private windowsSeq = 0;
  private hourSeq = 0;
  /**
   * When resumed and until `start` has read the window in progress (begun when the report's
   * last window ended) back: the report's checkpoint (null: a report stored before them).
   */
  private resumedFrom: { checkpoint: ShadowLiveCheckpoint | null; windowStartedAt: number } | null = null;
  private checkpointTimer: NodeJS.Timeout | null = null;
  /** Something changed since the last status published. */
  private changed = false;
  /** Publishes in the order their snapshots were taken: a late write never undoes a newer one. */
  private publishing: Promise<void> = Promise.resolve();
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
   * restarted, or another one taking the campaign over; published at each window's close and
   * every CHECKPOINT_MS while anything changes). Restored:
   * - from the report: counters (offered, replayed, shed, samples stored), tier, analyzer
   *   breaker, linked runs, windows and hours, the run of regressed windows (counted back from
   *   the windows), and the candidate breaker's failure streak and open-until (`checkpoint`;
   *   open-until is wall-clock time, so it holds on another replica);
   * - from the stored samples, by seq after the report's `checkpoint` (read in `start`): the
   *   window in progress (its newest RESUMED_WINDOW_MAX samples; it then starts where the last
   *   window ended), the hour's pool (a uniform HOUR_RESERVOIR of the hour's samples, all of
   *   them counted), and the candidate outcomes the report's breaker had not seen, which go on
   *   with its streak (5 failures open it again, for 10 s from the resume).
   * Lost: counts of the last CHECKPOINT_MS at most; samples pruned before the resume (past
   *   `keepSamples`: the window and hour cover what storage still held); a sample stored out of
   *   seq order (concurrent inserts) as a window closed may miss the rebuilt window; the token
   *   bucket (full) and the window's analyzer probes (afresh). A report without `checkpoint`
   *   (stored before it existed) restores the first list only, the candidate breaker closed,
   *   every sample stored before the resume counted as in its windows.
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
    const checkpoint = status.checkpoint ?? null;
    this.resumedFrom = { checkpoint, windowStartedAt: status.windows.at(-1)?.endedAt ?? createdAt };
    if (!checkpoint) return;
    this.consecutiveFailures = checkpoint.candidateFailures;
    this.breakerOpenUntil = checkpoint.candidateOpenUntil;
    this.lastSeq = checkpoint.lastSeq;
    this.windowsSeq = checkpoint.windowsSeq;
    this.hourSeq = checkpoint.hourSeq;
  }

  /** The window in progress, the hour's pool and the candidate's unseen outcomes, from the samples stored after `from`. */
  private async readBack(from: ShadowLiveCheckpoint | null, windowStartedAt: number): Promise<void> {
    if (!from) {
      // Where the report's windows end is not known: every sample stored so far counts as in
      // them (as it did before checkpoints), so a crash before the next window counts none twice.
      const newest = await this.deps.storedAfter(0, 1, 'newest');
      this.lastSeq = this.windowsSeq = this.hourSeq = newest.samples[0]?.seq ?? 0;
      return;
    }
    const hour = await this.deps.storedAfter(from.hourSeq, HOUR_RESERVOIR, 'random');
    this.hour = hour.samples.map((s) => s.sample);
    this.hourSeen = hour.total;
    const window = await this.deps.storedAfter(from.windowsSeq, RESUMED_WINDOW_MAX, 'newest');
    this.window = window.samples.map((s) => s.sample);
    // Min: the report's time is another replica's clock.
    if (this.window.length > 0) this.windowStartedAt = Math.min(windowStartedAt, this.windowStartedAt);
    for (const { seq, sample } of window.samples) {
      if (seq <= from.lastSeq) continue;
      this.countCandidate(sample.candidate.ok);
      this.lastSeq = seq;
    }
  }

  get comparesSimilarity(): boolean {
    return this.config.embeddings !== undefined;
  }

  async start(): Promise<void> {
    // Before any replay: what is read back was stored by the runner before this one.
    if (this.resumedFrom) {
      await this.readBack(this.resumedFrom.checkpoint, this.resumedFrom.windowStartedAt);
      this.resumedFrom = null;
    }
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
    if (this.config.source.windowMs > CHECKPOINT_MS) {
      this.checkpointTimer = setInterval(() => {
        if (!this.changed) return;
        this.publish().catch((error: Error) =>
          this.deps.log(`shadow ${this.id}: status not published: ${error.message}`),
        );
      }, CHECKPOINT_MS);
      this.checkpointTimer.unref();
    }
  }

  /** The kill switch: no replay starts after this returns, and those in flight are aborted. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort(new Error('shadow campaign stopped'));
    if (this.windowTimer) clearInterval(this.windowTimer);
    if (this.checkpointTimer) clearInterval(this.checkpointTimer);
    await this.subscription?.close();
    await this.breakerSubscription?.close();
    await Promise.allSettled(this.inFlight);
    // Not read back: the report it resumed from stands as it was, for the next take-over to
    // read back (a window closed now would count the samples it holds as published).
    if (this.resumedFrom) return;
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
      checkpoint: {
        windowsSeq: this.windowsSeq,
        hourSeq: this.hourSeq,
        lastSeq: this.lastSeq,
        candidateFailures: this.consecutiveFailures,
        candidateOpenUntil: this.breakerOpenUntil,
      },
    };
  }

  /** Publishes the status as it is now, once those published before it are written. */
  private publish(): Promise<void> {
    const status = this.snapshot();
    const stored = this.stored;
    this.changed = false;
    const published = this.publishing.then(() => this.deps.publish(status, stored));
    this.publishing = published.catch(() => void (this.changed = true));
    return published;
  }

  private onBreaker(change: BreakerChange): void {
    if (change.runId !== shadowRunId(this.id)) return;
    // An analyzer that crashed after publishing a change and before storing its breaker publishes
    // it again, with the same id (derived from the judged signal's): heard once, counted once.
    if (this.heardBreakerChanges.includes(change.id)) return;
    this.heardBreakerChanges = [...this.heardBreakerChanges, change.id].slice(-50);
    this.changed = true;
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
    this.changed = true;
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
    let stored: StoredShadowSample | null;
    try {
      stored = await this.deps.replay(request, this.abort.signal);
    } catch (error) {
      if (!this.stopped) this.deps.log(`shadow ${this.id}: replay failed: ${(error as Error).message}`);
      return;
    }
    if (!stored || this.stopped) return;
    const { sample } = stored;
    this.changed = true;
    this.status.replayed++;
    this.stored++;
    this.lastSeq = Math.max(this.lastSeq, stored.seq);
    this.countCandidate(sample.candidate.ok);
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

  /** The candidate's breaker: BREAKER_FAILURES failures in a row open it for BREAKER_COOLDOWN_MS. */
  private countCandidate(ok: boolean): void {
    if (ok) {
      this.consecutiveFailures = 0;
      this.breakerOpenUntil = 0;
    } else if (++this.consecutiveFailures >= BREAKER_FAILURES) {
      this.breakerOpenUntil = Date.now() + BREAKER_COOLDOWN_MS;
      this.consecutiveFailures = 0;
      this.deps.log(`shadow ${this.id}: candidate failing, breaker open for ${BREAKER_COOLDOWN_MS} ms`);
    }
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
    this.windowsSeq = this.lastSeq;
    this.probes = new Map();
    this.status.windows = [...this.status.windows, report].slice(-WINDOWS_KEPT);
    if (now - this.hourStartedAt >= 3_600_000) {
      this.status.hours = [...this.status.hours, windowReport(this.hour, this.hourStartedAt, now)].slice(
        -HOURS_KEPT,
      );
      this.hour = [];
      this.hourSeen = 0;
      this.hourStartedAt = now;
      this.hourSeq = this.windowsSeq;
    }
    // A window without a group of enough samples is no evidence either way: it neither
    // regresses, nor clears the tier, nor probes the analyzer's breaker.
    if (report.groups.some((g) => g.samples >= MIN_SAMPLES_PER_GROUP)) {
      await this.judge(report);
      await this.signal(report);
    }
    await this.publish();
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
