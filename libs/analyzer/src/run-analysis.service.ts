import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@fathom/observability';
import { RunMetrics } from './run.metrics';
import { InjectBus, consume, subscribeAll, type Bus, type Subscription } from '@fathom/bus';
import {
  RunEventRepository,
  RunReportRepository,
  RunRepository,
  ShadowBreakerRepository,
} from '@fathom/storage';
import {
  Topics,
  envelope,
  type BreakerChange,
  type CampaignSpec,
  type GpuTelemetry,
  type RequestTelemetry,
  type RootCauseChange,
  type RunLifecycle,
  type RunShardCommand,
  type SemanticSignal,
  type DetectorSignal,
  type SloTierChange,
  type TelemetryWindow,
  Detectors,
  type DetectorName,
} from '@fathom/contracts';
import {
  BreakerBoard,
  DEFAULT_ROOT_CAUSE_OPTIONS,
  DEFAULT_TIER_POLICY,
  RootCauseTracker,
  RunTimeline,
  TierHysteresis,
  tierPolicyFor,
  judgeClientBound,
  clientBoundRootCause,
  diagnose,
  digestRecord,
  evaluateTiers,
  type BreakerKey,
  type BreakerTransition,
  type ObjectiveResult,
  type RootCauseOptions,
  type TierPolicyConfig,
  type TrackedCause,
} from '@fathom/analysis';
import {
  RunEventStore,
  readStoredEvents,
  storedDigests,
  type DigestBatch,
  type StoredKind,
} from './run-event.store';
import { RunReportFinalizer, stripNamedAt, type LiveRuns } from './run-report.finalizer';
import { isStaleShardCommand } from '@fathom/contracts';
import { ANALYZER_SETTINGS, type AnalyzerSettings } from './analyzer.settings';
import { judgeShadowWindow, shadowBreakerKey } from './shadow-breaker.util';

/** Live verdicts are recomputed at most this often per run (ms). */
const EVALUATE_EVERY_MS = 500;
/**
 * Detectors that open a breaker on their layer (a signal of severity warning or critical; info
 * says an episode cleared), each published by the service that sees the fact: prompt explosion,
 * reranker busy and semantic failure rate by the semantic-monitor, DRAM saturation by the
 * gpu-collector. Keyed by `Detectors` so that a breaker on a name no service publishes does not
 * compile.
 */
const BREAKER_SIGNALS: Partial<Record<DetectorName, string>> = {
  [Detectors.promptExplosion]: 'llm',
  [Detectors.dramSaturation]: 'llm',
  [Detectors.rerankerBusy]: 'rerank',
  [Detectors.semanticFailureRate]: 'llm',
};

/**
 * What a live run keeps beyond its head: the longest span anything judges it over (the slow tier
 * pair's 5 min by default) plus a margin. Older evidence is read back from storage for the report.
 */
const LIVE_MARGIN_MS = 60_000;
/** A live timeline is pruned at most this often (ms of evidence time). */
const PRUNE_EVERY_MS = 10_000;
/**
 * Stored events kept per live shadow campaign (its window signals and the breaker changes they
 * cause): a day of the default 60 s windows. Such a campaign never ends, so its run's rows would
 * grow for ever; the campaign's own report keeps the windows that matter (the last 60, 24 hours).
 * Older rows are deleted once every 100 of its signals, so at most 1,440 + 100 + its breaker
 * changes since are stored.
 */
const SHADOW_EVENTS_KEPT = 1440;
const SHADOW_PRUNE_EVERY = 100;

/** Live state of one run; rebuilt from storage when the analyzer restarts mid-run. */
interface RunState {
  readonly campaignId: string;
  /** Settles once the state is rebuilt from storage; nothing reads or judges it before. */
  restored: Promise<void>;
  spec: CampaignSpec | null;
  readonly timeline: RunTimeline;
  /**
   * The campaign's tiers (`slo.tiers`) or the defaults; fixed once the spec is known. Until then
   * (a run whose shard command is not stored yet) the defaults judge, provisionally.
   */
  tierPolicy: TierPolicyConfig;
  tierPolicyFromSpec: boolean;
  tiers: TierHysteresis;
  readonly breakers: BreakerBoard;
  readonly causes: RootCauseTracker;
  lastEvaluatedAt: number;
  evaluateTimer: NodeJS.Timeout | null;
  /** Evidence time of the last prune. */
  prunedAt: number;
}

/**
 * The analyzer service: wires the bus to its three jobs and delegates.
 * - `RunEventStore`: every event it consumes is stored (idempotently, by event id) before the
 *   offset is committed, so an analyzer killed mid-run and restarted loses nothing.
 * - live judgement (here): while a run goes, its recent evidence (and its head, the baseline)
 *   sits on a pruned timeline from which tiers (multi-window, with hysteresis), circuit breakers
 *   and ranked root causes are derived, every change published; memory stays flat however long
 *   the run lasts.
 * - `RunReportFinalizer`: once every shard ended (or the run went silent with a shard that never
 *   did: `partial`), the summary and the versioned report from what was stored.
 */
@Injectable()
export class RunAnalysisService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RunAnalysisService.name);
  private readonly subscriptions: Subscription[] = [];
  private readonly states = new Map<string, RunState>();
  /** Signals stored per live shadow campaign since its events were last pruned. */
  private readonly shadowSignalsSincePrune = new Map<string, number>();
  private readonly causeOptions: RootCauseOptions = DEFAULT_ROOT_CAUSE_OPTIONS;
  private readonly store: RunEventStore;
  private readonly finalizer: RunReportFinalizer;
  private closed = false;
  private readonly metrics: RunMetrics;

  constructor(
    @InjectBus() private readonly bus: Bus,
    events: RunEventRepository,
    reports: RunReportRepository,
    runs: RunRepository,
    private readonly shadowBreakers: ShadowBreakerRepository,
    @Inject(ANALYZER_SETTINGS) settings: AnalyzerSettings,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    this.store = new RunEventStore(events);
    const live: LiveRuns = {
      finalEvaluation: (runId) => this.finalEvaluation(runId),
      forget: (runId) => this.forget(runId),
      liveRunIds: () => [...this.states.keys()],
      reported: (runId, validity, tier) => this.metrics.reported(runId, validity, tier),
    };
    this.finalizer = new RunReportFinalizer(
      bus,
      this.store,
      reports,
      runs,
      live,
      {
        settleMs: settings.FATHOM_ANALYZER_SETTLE_MS,
        silenceMs: settings.FATHOM_ANALYZER_SHARD_SILENCE_MS,
        stallMs: this.causeOptions.stallMs,
      },
      this.logger,
    );
    this.metrics = new RunMetrics(registry);
  }

  async onModuleInit(): Promise<void> {
    this.subscriptions.push(
      ...(await subscribeAll(this.bus, 'analyzer', [
        consume(Topics.runShard, (e) => this.onShard(e), { fromBeginning: true }),
        consume(Topics.telemetryWindow, (e) => this.onWindow(e)),
        consume(Topics.requestTelemetry, (e) => this.onRecords(e)),
        consume(Topics.semanticSignal, (e) => this.onSemantic(e)),
        consume(Topics.gpuTelemetry, (e) => this.onGpu(e)),
        consume(Topics.runLifecycle, (e) => this.onLifecycle(e)),
      ])),
    );
    // Resume runs a previous analyzer left unfinished, and watch for runs that go silent.
    void this.finalizer.sweep();
    this.finalizer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    this.finalizer.close();
    for (const state of this.states.values()) if (state.evaluateTimer) clearTimeout(state.evaluateTimer);
    await Promise.all(this.subscriptions.map((s) => s.close()));
  }

  private save(kind: StoredKind, topic: string, event: { id: string; runId: string; emittedAt: number }) {
    return this.store.save(kind, topic, event);
  }

  private newState(campaignId: string, spec: CampaignSpec | null): RunState {
    return {
      campaignId,
      restored: Promise.resolve(),
      spec,
      timeline: new RunTimeline(),
      tierPolicy: DEFAULT_TIER_POLICY,
      tierPolicyFromSpec: false,
      tiers: new TierHysteresis(DEFAULT_TIER_POLICY),
      breakers: new BreakerBoard(),
      causes: new RootCauseTracker(),
      lastEvaluatedAt: 0,
      evaluateTimer: null,
      prunedAt: 0,
    };
  }

  /**
   * The run's live state; after a restart, rebuilt from what was stored: the timeline, the spec's
   * tier policy, and the tier the run is in (the last tier change stored), so that the new
   * process neither announces the run's tier again nor takes a change for a first assignment.
   * Callers arriving while it is rebuilt wait for it.
   */
  private async state(runId: string, campaignId: string): Promise<RunState> {
    const known = this.states.get(runId);
    if (known) {
      await known.restored;
      return known;
    }
    const state = this.newState(campaignId, null);
    this.states.set(runId, state);
    state.restored = this.restore(runId, state);
    await state.restored;
    return state;
  }

  private async restore(runId: string, state: RunState): Promise<void> {
    // Read a page at a time; token stats are not read (nothing live judges them).
    const stored = await readStoredEvents(this.store, runId);
    for (const w of stored.timeline.windows) state.timeline.addWindow(w);
    for (const d of stored.timeline.detectors) state.timeline.addDetector(d);
    for (const scrape of stored.gpu) state.timeline.addGpu(scrape);
    state.spec ??= stored.spec;
    const { tierChanges, tiersPublished: published } = stored;
    if (state.spec) {
      state.tierPolicy = tierPolicyFor(state.spec.slo.tiers);
      state.tierPolicyFromSpec = true;
      state.tiers = new TierHysteresis(state.tierPolicy);
    }
    // Only the digests the live state keeps (`prune`), a page at a time: never a long run's whole.
    const dropped = this.prunedSpan(state, Date.now());
    for await (const digests of storedDigests(this.store, runId))
      state.timeline.addDigests(
        dropped ? digests.filter((d) => d.at <= dropped.headUntilMs || d.at > dropped.beforeMs) : digests,
      );
    // Stored in the order they were announced (listByRun: by emittedAt, then id).
    const last = tierChanges[tierChanges.length - 1];
    if (last) {
      const rank = (tier: string) => state.tierPolicy.tiers.findIndex((t) => t.name === tier);
      const worse = last.from !== null && (rank(last.to) === -1 || rank(last.to) > rank(last.from));
      state.tiers.restore(last.to, worse ? missOf(last) : null);
    }
    // A change stored but not known to be published (the previous process stopped in between) is
    // published now, with its own id: a consumer that already has it can tell it is the same.
    for (const change of tierChanges) {
      if (!published.has(change.id)) await this.publishTier(change);
    }
  }

  /** Publishes a stored tier change, then records that it was published. */
  private async publishTier(event: SloTierChange): Promise<void> {
    await this.bus.publish(Topics.sloTier, event);
    await this.store.markTierPublished(event);
  }

  private async onShard(command: RunShardCommand): Promise<void> {
    if (isStaleShardCommand(command)) return;
    await this.save('shard-command', Topics.runShard.name, command);
    const state = await this.state(command.runId, command.campaignId);
    state.spec ??= command.spec;
  }

  private async onWindow(window: TelemetryWindow): Promise<void> {
    if (await this.save('window', Topics.telemetryWindow.name, window)) this.metrics.observeWindow(window);
    this.finalizer.heard(window.runId);
    const state = await this.state(window.runId, window.campaignId);
    state.timeline.addWindow(window);
    this.scheduleEvaluation(window.runId, state);
  }

  private async onRecords(batch: RequestTelemetry): Promise<void> {
    const state = await this.state(batch.runId, batch.campaignId);
    state.spec ??= await this.store.spec(batch.runId);
    if (!state.spec) return; // a run the analyzer never saw planned: nothing to attribute calls to
    const digests = batch.records.map((r) => digestRecord(r, state.spec!));
    const stored: DigestBatch = {
      id: batch.id,
      runId: batch.runId,
      campaignId: batch.campaignId,
      emittedAt: batch.emittedAt,
      digests,
    };
    await this.save('digest', Topics.requestTelemetry.name, stored);
    state.timeline.addDigests(digests);
    const node = nodeOf(state.spec);
    const transitions: BreakerTransition[] = [];
    for (const d of digests) {
      for (const call of d.calls) {
        transitions.push(
          ...state.breakers.observe(
            { target: state.spec.target.baseUrl, layer: call.layer, node },
            d.at,
            call.ok,
            d.e2eMs,
            call.path,
          ),
        );
      }
    }
    await this.publishBreakers(batch.runId, state, transitions);
    this.scheduleEvaluation(batch.runId, state);
  }

  private async onSemantic(signal: SemanticSignal): Promise<void> {
    await this.save(
      signal.kind === 'token-stats-batch' ? 'token-stats' : 'semantic',
      Topics.semanticSignal.name,
      signal,
    );
    if (signal.kind !== 'detector') return;
    if (signal.detector === Detectors.shadowRegression) return this.onShadowSignal(signal);
    const state = await this.state(signal.runId, signal.campaignId);
    state.timeline.addDetector(signal);
    this.scheduleEvaluation(signal.runId, state);
    const layer = BREAKER_SIGNALS[signal.detector as DetectorName];
    if (layer && state.spec && signal.severity !== 'info') {
      const key = { target: state.spec.target.baseUrl, layer, node: nodeOf(state.spec) };
      await this.publishBreakers(
        signal.runId,
        state,
        state.breakers.trip(key, signal.emittedAt, `${signal.detector}: ${signal.message}`, signal.figures),
      );
    }
  }

  /**
   * A live shadow campaign's window verdict, on the candidate's breaker (`judgeShadowWindow`):
   * after the breaker's open time, `halfOpenProbes` clean windows in a row close it. No run, tier
   * or root cause: a shadow campaign is judged by its own windows.
   *
   * The breaker lives in the store (`shadow_breakers`), not in this process: each window is
   * judged on the breaker as stored after the previous one, then its changes are published, then
   * it is stored again. So a restarted analyzer, or the one that takes the campaign's partition
   * over, goes on from the same state, and a window judged already (a redelivery) is skipped.
   * Stopped between publishing and storing, the window is judged again on redelivery: the same
   * changes, with the same ids (derived from the signal's).
   */
  private async onShadowSignal(signal: DetectorSignal): Promise<void> {
    await this.rotateShadowEvents(signal.runId);
    const key = shadowBreakerKey(signal);
    if (!key) {
      this.logger.warn(`shadow signal ${signal.id} names no candidate (labels.target): ignored`);
      return;
    }
    const judged = judgeShadowWindow(await this.shadowBreakers.get(signal.runId, key), key, signal);
    if (!judged) return;
    await this.publishBreakers(
      signal.runId,
      { campaignId: signal.campaignId },
      judged.transitions,
      signal.id,
    );
    await this.shadowBreakers.save(judged.breaker);
  }

  /** Keeps a live shadow campaign's stored events bounded (see SHADOW_EVENTS_KEPT). */
  private async rotateShadowEvents(runId: string): Promise<void> {
    const since = (this.shadowSignalsSincePrune.get(runId) ?? 0) + 1;
    this.shadowSignalsSincePrune.set(runId, since % SHADOW_PRUNE_EVERY);
    if (since < SHADOW_PRUNE_EVERY) return;
    // A failed delete costs this round of rotation (the next one catches up), not the signal.
    await this.store
      .prune(runId, SHADOW_EVENTS_KEPT)
      .catch((error: Error) => this.logger.warn(`shadow ${runId}: old events not pruned: ${error.message}`));
  }

  private async onGpu(scrape: GpuTelemetry): Promise<void> {
    await this.save('gpu', Topics.gpuTelemetry.name, scrape);
    const state = await this.state(scrape.runId, scrape.campaignId);
    state.timeline.addGpu(scrape);
    this.scheduleEvaluation(scrape.runId, state);
  }

  private scheduleEvaluation(runId: string, state: RunState): void {
    if (state.evaluateTimer || this.closed) return;
    const wait = Math.max(0, state.lastEvaluatedAt + EVALUATE_EVERY_MS - Date.now());
    state.evaluateTimer = setTimeout(() => {
      state.evaluateTimer = null;
      state.lastEvaluatedAt = Date.now();
      this.evaluate(runId, state).catch((error: Error) =>
        this.logger.error(`run ${runId}: live evaluation failed: ${error.message}`),
      );
    }, wait);
  }

  /** Fixes the run's tier policy from its spec once known; a provisional tier is judged again. */
  private async resolveTierPolicy(runId: string, state: RunState): Promise<void> {
    if (state.tierPolicyFromSpec) return;
    state.spec ??= await this.store.spec(runId);
    if (!state.spec) return;
    const policy = tierPolicyFor(state.spec.slo.tiers);
    state.tierPolicyFromSpec = true;
    if (policy === state.tierPolicy) return;
    state.tierPolicy = policy;
    state.tiers = new TierHysteresis(policy);
  }

  /** Breakers that timed out to half-open, the tier (with hysteresis), and the ranked root causes. */
  private async evaluate(runId: string, state: RunState): Promise<void> {
    const now = state.timeline.latestMs;
    if (now === null) return;
    this.prune(state, now);
    await this.publishBreakers(runId, state, state.breakers.tick(now));
    await this.resolveTierPolicy(runId, state);
    const tierEvaluation = evaluateTiers(
      state.timeline,
      now,
      { breakerTripsPerMinute: state.breakers.tripsPerMinute(now) },
      state.tierPolicy,
    );
    const change = tierEvaluation && state.tiers.observe(tierEvaluation);
    if (change) {
      const event: SloTierChange = {
        ...envelope(state.campaignId, runId),
        from: change.from,
        to: change.to,
        reason: change.reason,
        figures: { ...change.figures, breakerTripsPerMinute: state.breakers.tripsPerMinute(now) },
        ...(change.objective ? { objective: change.objective } : {}),
      };
      await this.save('tier', Topics.sloTier.name, event);
      this.metrics.tierChanged(runId, event.from, event.to);
      await this.publishTier(event);
    }
    const p99Budget = state.spec?.slo.p99Ms ?? this.causeOptions.p99BudgetMs;
    // A client-bound run names that alone: its latencies describe the generator, not the target.
    const bound = judgeClientBound(state.timeline.windows);
    // A detector's verdict may come after the last record it judged: causes see it too.
    const causeNow = Math.max(now, state.timeline.latestDetectorMs ?? now);
    const diagnosis = bound
      ? [clientBoundRootCause(bound)]
      : diagnose(state.timeline, causeNow, { ...this.causeOptions, p99BudgetMs: p99Budget });
    if (state.causes.observe(diagnosis, Date.now())) {
      const ranked = state.causes.ranked();
      const event: RootCauseChange = {
        ...envelope(state.campaignId, runId),
        top: ranked[0]?.kind ?? null,
        causes: ranked.map(stripNamedAt),
      };
      await this.save('cause', Topics.rootCause.name, event);
      await this.bus.publish(Topics.rootCause, event);
      if (ranked[0])
        this.logger.log(`run ${runId}: root cause ${ranked[0].kind} (${ranked[0].confidence.toFixed(2)})`);
    }
  }

  private async publishBreakers(
    runId: string,
    state: Pick<RunState, 'campaignId'>,
    transitions: BreakerTransition[],
    /** The event the transitions follow from, when judging it again must give the same ids. */
    causeId?: string,
  ): Promise<void> {
    for (const [index, t] of transitions.entries()) {
      const event: BreakerChange = {
        ...envelope(state.campaignId, runId, Math.round(t.at)),
        ...(causeId === undefined ? {} : { id: `${causeId}:breaker:${index}` }),
        breaker: { ...t.key } as BreakerKey,
        from: t.from,
        to: t.to,
        reason: t.reason,
        paths: [...t.paths],
        figures: t.figures,
      };
      await this.save('breaker', Topics.breaker.name, event);
      this.metrics.breakerChanged(event);
      await this.bus.publish(Topics.breaker, event);
    }
  }

  private async onLifecycle(event: RunLifecycle): Promise<void> {
    await this.save('lifecycle', Topics.runLifecycle.name, event);
    this.finalizer.heard(event.runId);
    if (event.phase !== 'shard-started') void this.finalizer.maybeFinalize(event.runId);
  }

  /** Keeps the live timeline to its head (the baseline) and the longest span anything judges. */
  private prune(state: RunState, now: number): void {
    if (now - state.prunedAt < PRUNE_EVERY_MS) return;
    state.prunedAt = now;
    const dropped = this.prunedSpan(state, now);
    if (dropped) state.timeline.prune(dropped.headUntilMs, dropped.beforeMs);
  }

  /** What the live timeline forgets at `now`: (headUntilMs, beforeMs]; null before any window. */
  private prunedSpan(state: RunState, now: number): { headUntilMs: number; beforeMs: number } | null {
    const start = state.timeline.startMs;
    if (start === null) return null;
    const head = Math.max(
      state.tierPolicy.warmupMs,
      this.causeOptions.warmupMs + this.causeOptions.baselineMs,
    );
    const judged = Math.max(
      this.causeOptions.recentMs,
      ...state.tierPolicy.windows.map((w) => Math.max(w.longMs, w.shortMs)),
    );
    return { headUntilMs: start + head, beforeMs: now - judged - LIVE_MARGIN_MS };
  }

  /** A run's last live evaluation, before its report; its ranked causes (null: not live here). */
  private async finalEvaluation(runId: string): Promise<TrackedCause[] | null> {
    const live = this.states.get(runId);
    if (!live) return null;
    await live.restored;
    if (live.evaluateTimer) clearTimeout(live.evaluateTimer);
    live.evaluateTimer = null;
    await this.evaluate(runId, live);
    return live.causes.ranked();
  }

  private forget(runId: string): void {
    const state = this.states.get(runId);
    if (state?.evaluateTimer) clearTimeout(state.evaluateTimer);
    this.states.delete(runId);
  }
}

/** Host:port of the target: the node its breakers are kept for. */
function nodeOf(spec: CampaignSpec): string {
  return new URL(spec.target.baseUrl).host;
}

/** The objective a stored change into a worse tier named, as the tier tracker keeps it. */
function missOf(change: SloTierChange): ObjectiveResult | null {
  if (!change.objective) return null;
  const { value, threshold } = change.figures;
  return {
    objective: change.objective,
    value: value ?? null,
    threshold: threshold ?? Number.NaN,
    ok: false,
    text: change.reason,
  };
}
