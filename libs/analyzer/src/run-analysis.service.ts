import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectBus, consume, subscribeAll, type Bus, type Subscription } from '@fathom/bus';
import { RunEventRepository, RunReportRepository, RunRepository } from '@fathom/storage';
import {
  Topics,
  envelope,
  type BreakerChange,
  type CampaignSpec,
  type DetectorSignal,
  type GpuTelemetry,
  type RequestTelemetry,
  type RootCauseChange,
  type RunLifecycle,
  type RunShardCommand,
  type SemanticSignal,
  type SloTierChange,
  type TelemetryWindow,
  type TokenStatsSignal,
  Detectors,
  type DetectorName,
} from '@fathom/contracts';
import type { JsonValue } from '@fathom/storage';
import {
  BreakerBoard,
  DEFAULT_ROOT_CAUSE_OPTIONS,
  DEFAULT_TIER_POLICY,
  RootCauseTracker,
  RunTimeline,
  TierHysteresis,
  assessValidity,
  tierPolicyFor,
  judgeWholeRun,
  judgeClientBound,
  clientBoundRootCause,
  rootCausesOfRun,
  buildRunReportDocument,
  buildRunSummary,
  diagnose,
  digestRecord,
  evaluateTiers,
  type BreakerKey,
  type BreakerTransition,
  type ObjectiveResult,
  type RecordDigest,
  type RootCauseOptions,
  type TierPolicyConfig,
  type TrackedCause,
} from '@fathom/analysis';
import { DEFAULT_BANDWIDTH_SATURATION_THRESHOLD } from '@fathom/gpu';
import { isStaleShardCommand } from '@fathom/contracts';
import { ANALYZER_SETTINGS, type AnalyzerSettings } from './analyzer.settings';

const SETTLE_POLL_MS = 200;
/** Live verdicts are recomputed at most this often per run (ms). */
const EVALUATE_EVERY_MS = 500;
/** Consecutive saturated DCGM scrapes that open the LLM breaker of a node. */
const DRAM_SATURATED_SCRAPES = 3;
/**
 * Detectors that open a breaker on their layer. Keyed by `Detectors` so that a breaker on a name
 * no service publishes does not compile. (DRAM saturation opens the LLM breaker from the GPU
 * scrapes themselves, below.)
 */
const BREAKER_SIGNALS: Partial<Record<DetectorName, string>> = {
  [Detectors.promptExplosion]: 'llm',
};

/** `token-stats` apart from the other semantic signals: the settle check counts them against the records published. */
type StoredKind =
  | 'shard-command'
  | 'window'
  | 'lifecycle'
  | 'token-stats'
  | 'semantic'
  | 'gpu'
  | 'tier'
  | 'tier-published'
  | 'digest'
  | 'breaker'
  | 'cause';

/** Stored after a tier change was published (the change itself is stored before publishing). */
type TierPublished = {
  tierEventId: string;
};

interface DigestBatch {
  id: string;
  runId: string;
  campaignId: string;
  emittedAt: number;
  digests: RecordDigest[];
}

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
  dramSaturatedScrapes: number;
}

/**
 * Joins everything of a run: stores every event it consumes (idempotently, by event id, before
 * the offset is committed) and, while the run goes, keeps its evidence on a timeline from which
 * it derives tiers (multi-window, with hysteresis), circuit breakers and ranked root causes,
 * publishing every change. Once every shard has finished and its trailing telemetry arrived it
 * builds the summary and the versioned report document from what was stored, so an analyzer
 * killed mid-run and restarted loses nothing.
 */
@Injectable()
export class RunAnalysisService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RunAnalysisService.name);
  private readonly subscriptions: Subscription[] = [];
  private readonly states = new Map<string, RunState>();
  private readonly finalizing = new Set<string>();
  private readonly settleMs: number;
  private readonly causeOptions: RootCauseOptions = DEFAULT_ROOT_CAUSE_OPTIONS;
  private closed = false;

  constructor(
    @InjectBus() private readonly bus: Bus,
    private readonly events: RunEventRepository,
    private readonly reports: RunReportRepository,
    private readonly runs: RunRepository,
    @Inject(ANALYZER_SETTINGS) settings: AnalyzerSettings,
  ) {
    this.settleMs = settings.FATHOM_ANALYZER_SETTLE_MS;
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
    // Resume runs a previous analyzer left unfinished.
    for (const status of ['pending', 'running'] as const) {
      for (const run of await this.runs.list({ status })) void this.maybeFinalize(run.id);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    for (const state of this.states.values()) if (state.evaluateTimer) clearTimeout(state.evaluateTimer);
    await Promise.all(this.subscriptions.map((s) => s.close()));
  }

  private async store(
    kind: StoredKind,
    topic: string,
    event: { id: string; runId: string; emittedAt: number },
  ): Promise<void> {
    await this.events.appendMany([
      { eventId: event.id, runId: event.runId, topic, kind, occurredAt: event.emittedAt, payload: event },
    ]);
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
      dramSaturatedScrapes: 0,
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
    const stored = await this.events.listByRun(runId);
    const tierChanges: SloTierChange[] = [];
    const published = new Set<string>();
    for (const e of stored) {
      if (e.kind === 'shard-command') state.spec ??= (e.payload as RunShardCommand).spec;
      else if (e.kind === 'window') state.timeline.addWindow(e.payload as TelemetryWindow);
      else if (e.kind === 'digest') state.timeline.addDigests((e.payload as unknown as DigestBatch).digests);
      else if (e.kind === 'gpu') state.timeline.addGpu(e.payload as GpuTelemetry);
      else if (e.kind === 'semantic' && (e.payload as SemanticSignal).kind === 'detector')
        state.timeline.addDetector(e.payload as DetectorSignal);
      else if (e.kind === 'tier') tierChanges.push(e.payload as SloTierChange);
      else if (e.kind === 'tier-published')
        published.add((e.payload as unknown as TierPublished).tierEventId);
    }
    if (state.spec) {
      state.tierPolicy = tierPolicyFor(state.spec.slo.tiers);
      state.tierPolicyFromSpec = true;
      state.tiers = new TierHysteresis(state.tierPolicy);
    }
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
    const marker: TierPublished = { tierEventId: event.id };
    await this.events.appendMany([
      {
        eventId: `${event.id}:published`,
        runId: event.runId,
        topic: Topics.sloTier.name,
        kind: 'tier-published' satisfies StoredKind,
        occurredAt: event.emittedAt,
        payload: marker,
      },
    ]);
  }

  private async onShard(command: RunShardCommand): Promise<void> {
    if (isStaleShardCommand(command)) return;
    await this.store('shard-command', Topics.runShard.name, command);
    const state = await this.state(command.runId, command.campaignId);
    state.spec ??= command.spec;
  }

  private async onWindow(window: TelemetryWindow): Promise<void> {
    await this.store('window', Topics.telemetryWindow.name, window);
    const state = await this.state(window.runId, window.campaignId);
    state.timeline.addWindow(window);
    this.scheduleEvaluation(window.runId, state);
  }

  private async onRecords(batch: RequestTelemetry): Promise<void> {
    const state = await this.state(batch.runId, batch.campaignId);
    state.spec ??= await this.storedSpec(batch.runId);
    if (!state.spec) return; // a run the analyzer never saw planned: nothing to attribute calls to
    const digests = batch.records.map((r) => digestRecord(r, state.spec!));
    const stored: DigestBatch = {
      id: batch.id,
      runId: batch.runId,
      campaignId: batch.campaignId,
      emittedAt: batch.emittedAt,
      digests,
    };
    await this.store('digest', Topics.requestTelemetry.name, stored);
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
    await this.store(
      signal.kind === 'token-stats' ? 'token-stats' : 'semantic',
      Topics.semanticSignal.name,
      signal,
    );
    if (signal.kind !== 'detector') return;
    const state = await this.state(signal.runId, signal.campaignId);
    state.timeline.addDetector(signal);
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

  private async onGpu(scrape: GpuTelemetry): Promise<void> {
    await this.store('gpu', Topics.gpuTelemetry.name, scrape);
    const state = await this.state(scrape.runId, scrape.campaignId);
    state.timeline.addGpu(scrape);
    const dram = scrape.samples.filter((s) => s.metric === 'dram_active_ratio').map((s) => s.value);
    if (dram.length) {
      const peak = Math.max(...dram);
      state.dramSaturatedScrapes =
        peak > DEFAULT_BANDWIDTH_SATURATION_THRESHOLD ? state.dramSaturatedScrapes + 1 : 0;
      if (state.dramSaturatedScrapes === DRAM_SATURATED_SCRAPES && state.spec) {
        const key = { target: state.spec.target.baseUrl, layer: 'llm', node: nodeOf(state.spec) };
        const reason = `DRAM bandwidth saturated: DRAM active ${(peak * 100).toFixed(0)} % > ${DEFAULT_BANDWIDTH_SATURATION_THRESHOLD * 100} % for ${DRAM_SATURATED_SCRAPES} scrapes`;
        await this.publishBreakers(
          scrape.runId,
          state,
          state.breakers.trip(key, scrape.scrapedAt, reason, { dramActive: peak }),
        );
      }
    }
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

  /** The stored spec of a run (its first shard command), or null when none was stored. */
  private async storedSpec(runId: string): Promise<CampaignSpec | null> {
    const command = (await this.events.listByRun(runId, { topic: Topics.runShard.name }))[0];
    return (command?.payload as RunShardCommand | undefined)?.spec ?? null;
  }

  /** Fixes the run's tier policy from its spec once known; a provisional tier is judged again. */
  private async resolveTierPolicy(runId: string, state: RunState): Promise<void> {
    if (state.tierPolicyFromSpec) return;
    state.spec ??= await this.storedSpec(runId);
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
    await this.publishBreakers(runId, state, state.breakers.tick(now));
    await this.resolveTierPolicy(runId, state);
    const tierEvaluation = evaluateTiers(
      state.timeline,
      now,
      { breakerTripsPerMinute: state.breakers.tripsPerMinute(now) },
      state.tierPolicy,
    );
    const change = state.tiers.observe(tierEvaluation);
    if (change) {
      const event: SloTierChange = {
        ...envelope(state.campaignId, runId),
        from: change.from,
        to: change.to,
        reason: change.reason,
        figures: { ...change.figures, breakerTripsPerMinute: state.breakers.tripsPerMinute(now) },
        ...(change.objective ? { objective: change.objective } : {}),
      };
      await this.store('tier', Topics.sloTier.name, event);
      await this.publishTier(event);
    }
    const p99Budget = state.spec?.slo.p99Ms ?? this.causeOptions.p99BudgetMs;
    // A client-bound run names that alone: its latencies describe the generator, not the target.
    const bound = judgeClientBound(state.timeline.windows);
    const diagnosis = bound
      ? [clientBoundRootCause(bound)]
      : diagnose(state.timeline, now, { ...this.causeOptions, p99BudgetMs: p99Budget });
    if (state.causes.observe(diagnosis, Date.now())) {
      const ranked = state.causes.ranked();
      const event: RootCauseChange = {
        ...envelope(state.campaignId, runId),
        top: ranked[0]?.kind ?? null,
        causes: ranked.map(stripNamedAt),
      };
      await this.store('cause', Topics.rootCause.name, event);
      await this.bus.publish(Topics.rootCause, event);
      if (ranked[0])
        this.logger.log(`run ${runId}: root cause ${ranked[0].kind} (${ranked[0].confidence.toFixed(2)})`);
    }
  }

  private async publishBreakers(
    runId: string,
    state: RunState,
    transitions: BreakerTransition[],
  ): Promise<void> {
    for (const t of transitions) {
      const event: BreakerChange = {
        ...envelope(state.campaignId, runId, Math.round(t.at)),
        breaker: { ...t.key } as BreakerKey,
        from: t.from,
        to: t.to,
        reason: t.reason,
        paths: [...t.paths],
        figures: t.figures,
      };
      await this.store('breaker', Topics.breaker.name, event);
      await this.bus.publish(Topics.breaker, event);
    }
  }

  private async onLifecycle(event: RunLifecycle): Promise<void> {
    await this.store('lifecycle', Topics.runLifecycle.name, event);
    if (event.phase !== 'shard-started') void this.maybeFinalize(event.runId);
  }

  /** Reports the run once every shard finished and its trailing telemetry arrived (or settleMs passed). */
  private async maybeFinalize(runId: string): Promise<void> {
    if (this.finalizing.has(runId)) return;
    this.finalizing.add(runId);
    try {
      if (await this.reports.latest(runId)) return;
      const deadline = Date.now() + this.settleMs;
      for (;;) {
        if (this.closed) return;
        const lifecycle = (await this.events.listByRun(runId, { topic: Topics.runLifecycle.name })).map(
          (e) => e.payload as RunLifecycle,
        );
        const shardCount = lifecycle[0]?.shard.count;
        const ended = lifecycle.filter((l) => l.phase !== 'shard-started');
        if (!shardCount || new Set(ended.map((l) => l.shard.index)).size < shardCount) return;
        const expectedWindows = ended.reduce((n, l) => n + l.counts.windowsPublished, 0);
        const expectedSignals = ended.reduce((n, l) => n + l.counts.recordsPublished, 0);
        const windows = await this.events.countByRun(runId, { topic: Topics.telemetryWindow.name });
        // One token-stats signal per published record; detector and goodput signals are extra.
        const signals = await this.events.countByRun(runId, { kind: 'token-stats' });
        if ((windows >= expectedWindows && signals >= expectedSignals) || Date.now() >= deadline) {
          if (Date.now() >= deadline) {
            this.logger.warn(
              `run ${runId}: reporting with ${windows}/${expectedWindows} windows and ${signals}/${expectedSignals} token signals after ${this.settleMs} ms`,
            );
          }
          await this.report(runId, lifecycle);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
      }
    } catch (error) {
      this.logger.error(`run ${runId}: could not build the report: ${(error as Error).message}`);
    } finally {
      this.finalizing.delete(runId);
    }
  }

  private async report(runId: string, lifecycle: RunLifecycle[]): Promise<void> {
    const campaignId = lifecycle[0].campaignId;
    const live = this.states.get(runId);
    if (live?.evaluateTimer) clearTimeout(live.evaluateTimer);
    if (live) await this.evaluate(runId, live);
    const state = live ?? (await this.state(runId, campaignId));
    const stored = await this.events.listByRun(runId);
    const of = <T>(kind: StoredKind) => stored.filter((e) => e.kind === kind).map((e) => e.payload as T);
    const spec = of<RunShardCommand>('shard-command')[0]?.spec ?? null;
    const semantic = [...of<SemanticSignal>('token-stats'), ...of<SemanticSignal>('semantic')];
    const run = await this.runs.get(runId);
    const tierChanges = of<SloTierChange>('tier').sort((a, b) => a.emittedAt - b.emittedAt);
    const tiers = tierPolicyFor(spec?.slo.tiers).tiers;
    const breakerChanges = of<BreakerChange>('breaker').sort((a, b) => a.emittedAt - b.emittedAt);
    const wholeRun = judgeWholeRun(state.timeline, tiers, breakerChanges);
    const rootCauses = rootCausesOfRun(
      state.timeline.windows,
      live ? live.causes.ranked() : causesFromStored(of<RootCauseChange>('cause')),
    );
    const validity = assessValidity(state.timeline.windows, state.timeline.digests, rootCauses.length > 0);
    const built = buildRunSummary({
      spec: spec as CampaignSpec | null,
      lifecycle,
      windows: of<TelemetryWindow>('window'),
      tokenStats: semantic.filter((s): s is TokenStatsSignal => s.kind === 'token-stats'),
      detectorSignals: semantic.filter((s) => s.kind === 'detector').length,
      gpu: of<GpuTelemetry>('gpu'),
      tierChanges,
      aborted: run?.status === 'aborted',
      wholeRun,
      embedded:
        semantic.find(
          (s): s is DetectorSignal => s.kind === 'detector' && s.detector === Detectors.semanticGoodput,
        )?.figures.embedded ?? null,
    });
    const summary = { ...built, validity };
    const document = buildRunReportDocument({
      runId,
      campaignId,
      summary,
      timeline: state.timeline,
      tiers,
      tierChanges,
      breakerChanges,
      rootCauses,
      validity,
      stallMs: this.causeOptions.stallMs,
      gpu: of<GpuTelemetry>('gpu'),
      spec,
      tokenStats: semantic.filter((s): s is TokenStatsSignal => s.kind === 'token-stats'),
    });
    const saved = await this.reports.save(runId, document as unknown as JsonValue);
    await this.bus.publish(Topics.runReport, {
      ...envelope(campaignId, runId),
      summary,
      reportVersion: saved.version,
      validity,
      rootCauses: rootCauses.map(stripNamedAt),
    });
    this.states.delete(runId);
    this.logger.log(
      `run ${runId}: reported (${summary.requests} requests, tier ${summary.tier ?? 'n/a'}, ${rootCauses.length} causes, ${validity.valid ? 'valid' : 'invalid'})`,
    );
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

function stripNamedAt(cause: TrackedCause): Omit<TrackedCause, 'namedAt'> {
  const { namedAt: _namedAt, ...rest } = cause;
  return rest;
}

/** After a restart: each kind's strongest stored verdict, named when it was first published. */
function causesFromStored(changes: RootCauseChange[]): TrackedCause[] {
  const byKind = new Map<string, TrackedCause>();
  for (const change of changes.sort((a, b) => a.emittedAt - b.emittedAt)) {
    for (const cause of change.causes) {
      const seen = byKind.get(cause.kind);
      if (!seen) byKind.set(cause.kind, { ...cause, namedAt: change.emittedAt });
      else if (cause.confidence > seen.confidence)
        byKind.set(cause.kind, { ...cause, namedAt: seen.namedAt });
    }
  }
  return [...byKind.values()].sort((a, b) => b.confidence - a.confidence);
}
