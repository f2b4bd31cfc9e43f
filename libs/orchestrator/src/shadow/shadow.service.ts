import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { InjectBus, type Bus, type Subscription } from '@fathom/bus';
import { resolveSecrets, SecretResolutionError, type SecretSources } from '@fathom/load';
import {
  consumerGroup,
  secretText,
  ShadowCampaignInputSchema,
  ShadowLineSchema,
  ShadowRequestSchema,
  Topics,
  type ShadowCampaignInput,
  type ShadowControl,
  type ShadowLine,
  type ShadowLiveStatus,
  type ShadowRequest,
  type ShadowSample,
  FieldValidationError,
  fieldIssues,
  type FieldIssue,
} from '@fathom/contracts';
import { cosineSimilarity } from '@fathom/semantic';
import { compileRedactor, redactDeep } from './redaction.util';
import { callChatTarget, embedTexts } from './shadow-target.client';
import { answerChecks } from './answer-checks.util';
import { compareShadowSamples } from './shadow-diff.util';
import { ShadowLiveRunner } from './shadow-live.runner';
import { CampaignService } from '../campaign.service';
import { ShadowRepository, type ShadowLease, type StoredShadowCampaign } from '@fathom/storage';
import {
  ADMISSION_POLICY,
  API_ACCESS,
  admitDataFile,
  reachIssues,
  type AdmissionPolicy,
} from '../campaign-admission';
import { ORCHESTRATOR_SETTINGS, type OrchestratorSettings } from '../orchestrator.settings';

export class ShadowInputError extends FieldValidationError {
  constructor(issues: FieldIssue[]) {
    super('shadow campaign', issues);
  }
}

/** Why a campaign that was not live ends when its orchestrator went away mid-campaign. */
const INTERRUPTED_REASON =
  'the orchestrator running it restarted (or died) mid-campaign; a campaign that is not live cannot be resumed: its position in the source is lost';

/**
 * Runs shadow campaigns: each production request is redacted first (nothing unredacted is
 * stored or sent), replayed against primary, secondary and candidate at once, and stored with
 * the three observations; the report compares the candidate with the noise floor.
 *
 * Each running campaign is run by one orchestrator, the one holding its lease (see
 * ShadowRepository): renewed every FATHOM_SHADOW_LEASE_RENEW_MS, given up on a clean shutdown.
 * On the same beat, each orchestrator takes over the campaigns whose lease expired (their
 * orchestrator died, or shut down): a live one runs on here from its stored report, one that is
 * not live ends `failed` (INTERRUPTED_REASON). So a live campaign outlives restarts, and one whose
 * replica died is run again within FATHOM_SHADOW_LEASE_MS + FATHOM_SHADOW_LEASE_RENEW_MS.
 */
@Injectable()
export class ShadowService implements OnApplicationBootstrap, OnApplicationShutdown {
  private sendSeq = 0;
  private readonly logger = new Logger(ShadowService.name);
  private readonly running = new Map<string, Promise<void>>();
  private readonly subscriptions = new Set<Subscription>();
  private readonly live = new Map<string, ShadowLiveRunner>();
  private closed = false;
  /** Mirrored copies the bus refused (the mirror already answered 202; the copy is lost, counted). */
  mirrorDropped = 0;
  /** This orchestrator's hold on the campaigns it runs (its own owner id, for this process's life). */
  private readonly lease: ShadowLease;
  private readonly renewEveryMs: number;
  private leaseTimer: NodeJS.Timeout | null = null;
  private leasePassing: Promise<void> | null = null;
  /**
   * Running live campaigns, whoever runs them, as of the last lease pass: their mirrored copies
   * are accepted here too (the bus takes them to the campaign's runner, on whichever replica).
   */
  private runningLive = new Set<string>();
  /** Bumped by each stop, so a lease pass that read the store before it does not bring the id back. */
  private stops = 0;

  constructor(
    @InjectBus() private readonly bus: Bus,
    private readonly shadows: ShadowRepository,
    private readonly campaigns: CampaignService,
    @Inject(ADMISSION_POLICY) private readonly policy: AdmissionPolicy,
    @Inject(ORCHESTRATOR_SETTINGS) settings: OrchestratorSettings,
  ) {
    this.secretSources = { env: settings.secretEnv ?? {}, secretsDir: settings.FATHOM_SECRETS_DIR ?? null };
    this.lease = { owner: randomUUID(), ttlMs: settings.FATHOM_SHADOW_LEASE_MS };
    this.renewEveryMs = settings.FATHOM_SHADOW_LEASE_RENEW_MS;
  }

  private readonly secretSources: SecretSources;

  /** Takes over the campaigns left without a live orchestrator (this one restarted), then keeps the leases. */
  async onApplicationBootstrap(): Promise<void> {
    // A stop taken by another orchestrator: this one's runner of it stops now (each
    // orchestrator reads every control message: a group of its own).
    this.subscriptions.add(
      await this.bus.subscribe(
        Topics.shadowControl,
        { group: consumerGroup('orchestrator', Topics.shadowControl, this.lease.owner) },
        (control: ShadowControl) => this.stoppedElsewhere(control.campaignId),
      ),
    );
    await this.leasePass();
    this.leaseTimer = setInterval(() => void this.leasePass(), this.renewEveryMs);
    this.leaseTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    await this.leasePassing;
    await Promise.all([...this.live.values()].map((r) => r.stop()));
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    await Promise.allSettled(this.running.values());
    // The live campaigns stopped here, each with its last window published, go to the next
    // orchestrator to look (this one restarted, or another replica) at once, not after the lease.
    await this.shadows
      .releaseLeases(this.lease.owner)
      .catch((error: Error) => this.logger.warn(`shadow leases not released: ${error.message}`));
  }

  /** Another orchestrator ended live campaign `id` (its stop): the runner here, if any, stops replaying. */
  private async stoppedElsewhere(id: string): Promise<void> {
    this.runningLive.delete(id);
    const runner = this.live.get(id);
    if (!runner) return;
    this.live.delete(id);
    await runner.stop();
    this.logger.log(`shadow ${id}: stopped through another orchestrator: runner stopped`);
  }

  /** One renewal and take-over pass (one already under way is joined, not doubled). */
  private leasePass(): Promise<void> {
    this.leasePassing ??= this.passLeases().finally(() => (this.leasePassing = null));
    return this.leasePassing;
  }

  private async passLeases(): Promise<void> {
    if (this.closed) return;
    try {
      // Only runners started before the renewal are judged by it: one started meanwhile holds
      // the lease its campaign was created (or taken over) with.
      const before = [...this.live];
      const held = new Set(await this.shadows.renewLeases(this.lease));
      for (const [id, runner] of before) {
        if (held.has(id) || this.live.get(id) !== runner) continue;
        // Stopped through another replica, or taken over by one (this process stalled past its
        // lease): the other is its runner now; this one stops replaying and writes nothing.
        this.live.delete(id);
        this.logger.warn(
          `shadow ${id}: no longer held here (stopped or taken over elsewhere): runner stopped`,
        );
        await runner.stop();
      }
      for (const campaign of await this.shadows.takeOverExpired(this.lease)) {
        if (this.closed) break;
        await this.takeOver(campaign);
      }
      const stops = this.stops;
      const running = new Set(await this.shadows.runningLiveIds());
      if (stops === this.stops) this.runningLive = running;
    } catch (error) {
      this.logger.error(`shadow lease pass failed: ${(error as Error).message}`);
    }
  }

  /**
   * A running campaign whose orchestrator went away: a live one runs on here, secrets resolved
   * again from its stored references, its report going on from the last one published; any
   * other ends `failed` with what it had replayed.
   */
  private async takeOver(campaign: StoredShadowCampaign): Promise<void> {
    const { id, config } = campaign;
    // Its lease lapsed while it ran here (the store unreachable for longer than the lease) and
    // this pass took it back: the runner goes on.
    if (this.live.has(id) || this.running.has(id)) return;
    try {
      if (config.source.type !== 'live') {
        await this.shadows.finish(id, 'failed', await this.comparisonReport(id, config), INTERRUPTED_REASON);
        this.logger.warn(`shadow ${id}: ${INTERRUPTED_REASON}`);
        return;
      }
      let resolved: ShadowCampaignInput;
      try {
        resolved = await resolveSecrets(config, this.secretSources);
      } catch (error) {
        if (!(error instanceof SecretResolutionError)) throw error;
        const reason = `taken over after an orchestrator restart, but its secrets cannot be resolved here: ${error.message}`;
        await this.shadows.finish(id, 'failed', campaign.report, reason);
        this.logger.error(`shadow ${id}: ${reason}`);
        return;
      }
      if (resolved.source.type !== 'live') return;
      const live = campaign.report?.live;
      await this.startLive(
        id,
        { ...resolved, source: resolved.source },
        live
          ? { status: live, samples: campaign.report?.samples ?? 0, createdAt: campaign.createdAt }
          : undefined,
      );
      this.logger.log(`shadow ${id}: live campaign taken over, running here`);
    } catch (error) {
      // Its lease was given up (startLive): the next pass, here or on another replica, tries again.
      this.logger.error(`shadow ${id}: take-over failed: ${(error as Error).message}`);
    }
  }

  /** Validates and starts a campaign in the background; throws ShadowInputError naming bad fields. */
  async start(input: unknown): Promise<StoredShadowCampaign> {
    const parsed = ShadowCampaignInputSchema.safeParse(input);
    if (!parsed.success) {
      throw new ShadowInputError(fieldIssues(parsed.error));
    }
    let config = parsed.data;
    const issues = await reachIssues(
      config,
      [
        ['primary.baseUrl', config.primary.baseUrl],
        ['secondary.baseUrl', config.secondary.baseUrl],
        ['candidate.baseUrl', config.candidate.baseUrl],
        ['embeddings.baseUrl', config.embeddings?.baseUrl],
      ],
      this.policy,
    );
    if (config.source.type === 'jsonl') {
      const file = await admitDataFile('source.path', config.source.path, this.policy, API_ACCESS);
      if ('issue' in file) issues.push(file.issue);
      else config = { ...config, source: { ...config.source, path: file.path } };
    }
    if (issues.length > 0) throw new ShadowInputError(issues);
    // Resolved in memory for this campaign's calls; stored with the references only.
    const resolved = await resolveSecrets(config, this.secretSources).catch((error: unknown) => {
      if (error instanceof SecretResolutionError)
        throw new ShadowInputError([{ field: '(secrets)', message: error.message }]);
      throw error;
    });
    const lines = config.source.type === 'jsonl' ? await readJsonl(config.source.path) : null;
    const campaign = await this.shadows.create(config, this.lease);
    if (resolved.source.type === 'live') {
      await this.startLive(campaign.id, { ...resolved, source: resolved.source });
      return campaign;
    }
    const done = this.execute(campaign.id, resolved, lines).finally(() => this.running.delete(campaign.id));
    this.running.set(campaign.id, done);
    return campaign;
  }

  /**
   * The kill switch of a live campaign: run here, no replay starts after this resolves (those in
   * flight are aborted) and the campaign ends `completed` with its live report. Run by another
   * replica, it ends `completed` with the report last published, and that replica's runner stops
   * on the stop's announcement (fathom.shadow.control.v1), or at its next lease pass should that
   * be lost. 'not-live' for a campaign that
   * ends by itself, null when there is no such running campaign.
   */
  async stop(id: string): Promise<'stopped' | 'not-live' | null> {
    this.stops++;
    this.runningLive.delete(id);
    const runner = this.live.get(id);
    if (!runner) {
      const campaign = await this.shadows.get(id);
      if (!campaign || campaign.status !== 'running') return null;
      if (campaign.config.source.type !== 'live') return 'not-live';
      await this.shadows.finish(id, 'completed', campaign.report, 'stopped');
      // The orchestrator running it stops its runner on this at once; its next lease pass would
      // (it no longer holds a finished campaign), should the message be lost.
      await this.bus
        .publish(Topics.shadowControl, {
          id: randomUUID(),
          schemaVersion: 1,
          emittedAt: Date.now(),
          campaignId: id,
          kind: 'stopped',
        })
        .catch((error: Error) =>
          this.logger.warn(
            `shadow ${id}: stop not announced (${error.message}); its runner stops at its next lease pass`,
          ),
        );
      return 'stopped';
    }
    this.live.delete(id);
    await runner.stop();
    const samples = (await this.shadows.samples(id)).map((s) => s.sample);
    await this.shadows.finish(
      id,
      'completed',
      this.liveReport(runner.snapshot(), samples.length, samples, runner.comparesSimilarity),
      'stopped',
    );
    return 'stopped';
  }

  /**
   * A mirrored copy of a production request (front proxy `mirror`, or `fathom shadow gateway`)
   * offered to live campaign `id`: validated, then handed to the bus without waiting, so the
   * mirror is answered at once; the campaign's runner takes it from there, on whichever
   * orchestrator runs it. 'not-live' when `id` is no running live campaign (as of the last lease
   * pass, for one run by another replica).
   */
  offer(id: string, body: unknown, intent: string | undefined): 'accepted' | 'not-live' | 'invalid' {
    if (!this.live.has(id) && !this.runningLive.has(id)) return 'not-live';
    const request = ShadowRequestSchema.safeParse({
      id: randomUUID(),
      schemaVersion: 1,
      emittedAt: Date.now(),
      source: 'mirror',
      endpoint: '/v1/chat/completions',
      campaignId: id,
      intent,
      body,
    });
    if (!request.success) return 'invalid';
    this.bus.publish(Topics.shadowRequest, request.data).catch((error: Error) => {
      this.mirrorDropped++;
      this.logger.warn(`shadow ${id}: mirrored copy lost, the bus refused it: ${error.message}`);
    });
    return 'accepted';
  }

  /**
   * Several mirrored copies for live campaign `id` (`POST .../mirror/batch`), each as `offer`
   * takes one: how many were handed to the bus and how many were not chat completion requests.
   */
  offerBatch(
    id: string,
    copies: ReadonlyArray<{ body: unknown; intent?: string | null }>,
  ): { accepted: number; invalid: number } | 'not-live' {
    let accepted = 0;
    let invalid = 0;
    for (const copy of copies) {
      const outcome = this.offer(id, copy.body, copy.intent || undefined);
      if (outcome === 'not-live') return accepted === 0 ? 'not-live' : { accepted, invalid };
      if (outcome === 'accepted') accepted++;
      else invalid++;
    }
    return { accepted, invalid };
  }

  private async startLive(
    id: string,
    config: ShadowCampaignInput & { source: Extract<ShadowCampaignInput['source'], { type: 'live' }> },
    resumed?: ConstructorParameters<typeof ShadowLiveRunner>[3],
  ): Promise<void> {
    const redact = compileRedactor(config.redaction);
    const runner = new ShadowLiveRunner(
      id,
      config,
      {
        bus: this.bus,
        replay: async (request, signal) => {
          const line = ShadowLineSchema.safeParse({
            body: request.body,
            intent: request.intent,
            endpoint: request.endpoint,
          });
          if (!line.success) return null;
          return this.replay(id, config, redactDeep(line.data, redact), signal);
        },
        publish: (status, samples) =>
          this.shadows.updateReport(
            id,
            this.liveReport(status, samples, null, config.embeddings !== undefined),
            this.lease.owner,
          ),
        prune: (keep) => this.shadows.pruneSamples(id, keep),
        storedAfter: (afterSeq, limit, pick) => this.shadows.samplesAfter(id, afterSeq, limit, pick),
        startLinked: async (reason) => {
          const campaignId = config.onRegression.campaignId;
          if (!campaignId) return null;
          // Coalesced into an open run of that campaign, as alerts are: a regression that lasts
          // does not start a run per window.
          const admission = await this.campaigns.startStoredUnlessOpen(campaignId, 'shadow', reason);
          return admission?.started?.runId ?? admission?.refused?.id ?? null;
        },
        log: (message) => this.logger.log(message),
      },
      resumed,
    );
    this.live.set(id, runner);
    this.runningLive.add(id);
    try {
      await runner.start();
    } catch (error) {
      this.live.delete(id);
      this.runningLive.delete(id);
      await runner.stop();
      // Held with no runner it would be renewed and never run: the next lease pass, here or on
      // another replica, takes it over and tries again.
      await this.shadows.releaseLeases(this.lease.owner, id);
      throw error;
    }
  }

  /** The report of a campaign that is not live, from its stored samples: the comparison overall. */
  private async comparisonReport(
    id: string,
    config: ShadowCampaignInput,
  ): Promise<NonNullable<StoredShadowCampaign['report']>> {
    const samples = (await this.shadows.samples(id)).map((s) => s.sample);
    return {
      samples: samples.length,
      similarity: config.embeddings ? 'compared' : 'not configured',
      groups: compareShadowSamples(samples),
    };
  }

  /** `all`: every stored sample, for the overall groups at the end; null while it runs (windows only). */
  private liveReport(
    status: ShadowLiveStatus,
    samples: number,
    all: ShadowSample[] | null,
    comparesSimilarity: boolean,
  ): NonNullable<StoredShadowCampaign['report']> {
    const latest = status.windows.filter((w) => w.samples > 0).at(-1);
    return {
      samples,
      similarity: comparesSimilarity ? 'compared' : 'not configured',
      groups: all ? compareShadowSamples(all) : (latest?.groups ?? []),
      live: status,
    };
  }

  private async execute(
    id: string,
    config: ShadowCampaignInput,
    jsonlLines: ShadowLine[] | null,
  ): Promise<void> {
    try {
      const redact = compileRedactor(config.redaction);
      const replay = async (line: ShadowLine) =>
        void (await this.replay(id, config, redactDeep(line, redact)));
      if (config.source.type === 'topic') {
        await this.fromTopic(id, config.source, replay);
      } else {
        const lines = config.source.type === 'inline' ? config.source.requests : (jsonlLines ?? []);
        await pool(lines, config.concurrency, replay);
      }
      await this.shadows.finish(id, 'completed', await this.comparisonReport(id, config), null);
    } catch (error) {
      this.logger.error(`shadow campaign ${id} failed: ${(error as Error).message}`);
      await this.shadows.finish(id, 'failed', null, (error as Error).message);
    }
  }

  private async fromTopic(
    id: string,
    source: { maxRequests: number; durationMs: number },
    replay: (line: ShadowLine) => Promise<void>,
  ): Promise<void> {
    let accepted = 0;
    const inFlight = new Set<Promise<void>>();
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    // Own group per campaign: every shadow campaign sees every production request.
    const subscription = await this.bus.subscribe(
      Topics.shadowRequest,
      { group: consumerGroup('orchestrator', Topics.shadowRequest, id) },
      async (request: ShadowRequest) => {
        if (accepted >= source.maxRequests || this.closed) return;
        accepted++;
        const line = ShadowLineSchema.parse({
          body: request.body,
          intent: request.intent,
          endpoint: request.endpoint,
        });
        const p = replay(line).finally(() => inFlight.delete(p));
        inFlight.add(p);
        if (accepted >= source.maxRequests) finish();
      },
    );
    this.subscriptions.add(subscription);
    const timer = setTimeout(finish, source.durationMs);
    await finished;
    clearTimeout(timer);
    await subscription.close();
    this.subscriptions.delete(subscription);
    await Promise.allSettled(inFlight);
  }

  /** `line` is already redacted; resolves with the stored sample and its seq. */
  private async replay(
    id: string,
    config: ShadowCampaignInput,
    line: ShadowLine,
    signal?: AbortSignal,
  ): Promise<{ seq: number; sample: ShadowSample }> {
    const body = { ...line.body, model: config.model, max_tokens: config.maxTokens };
    // The send order rotates per request: whichever target is sent first gets a head start, and
    // a fixed order (candidate always last) showed up as a candidate latency "difference".
    const targets = [config.primary, config.secondary, config.candidate];
    const first = this.sendSeq++ % targets.length;
    const observed: Array<Awaited<ReturnType<typeof callChatTarget>>> = [];
    await Promise.all(
      targets.map(async (_, k) => {
        const i = (first + k) % targets.length;
        observed[i] = await callChatTarget(
          { baseUrl: targets[i].baseUrl, apiKey: secretText(targets[i].apiKey) },
          body,
          config.requestTimeoutMs,
          signal,
        );
      }),
    );
    const [primary, secondary, candidate] = observed;
    let simPS: number | null = null;
    let simPC: number | null = null;
    if (config.embeddings && primary.ok && secondary.ok && candidate.ok) {
      const [p, s, c] = await embedTexts(
        config.embeddings,
        [primary.content, secondary.content, candidate.content],
        config.requestTimeoutMs,
      );
      simPS = cosineSimilarity(p, s);
      simPC = cosineSimilarity(p, c);
    }
    const observation = (reply: typeof primary) => ({
      ok: reply.ok,
      e2eMs: reply.e2eMs,
      ttftMs: reply.ttftMs,
      hallucinationRisk: reply.hallucinationRisk,
      ...(reply.ok ? answerChecks(body, reply) : {}),
    });
    const sample: ShadowSample = {
      endpoint: line.endpoint,
      intent: line.intent ?? 'unlabelled',
      primary: observation(primary),
      secondary: observation(secondary),
      candidate: observation(candidate),
      similarityPrimarySecondary: simPS,
      similarityPrimaryCandidate: simPC,
    };
    return { seq: await this.shadows.addSample(id, line, sample), sample };
  }
}

async function readJsonl(path: string): Promise<ShadowLine[]> {
  const text = await readFile(path, 'utf8').catch(() => {
    throw new ShadowInputError([{ field: 'source.path', message: 'cannot read the file' }]);
  });
  return text
    .split('\n')
    .map((raw, index) => ({ raw: raw.trim(), line: index + 1 }))
    .filter(({ raw }) => raw.length > 0)
    .map(({ raw, line }) => {
      let value: unknown;
      try {
        value = JSON.parse(raw);
      } catch {
        throw new ShadowInputError([{ field: 'source.path', message: `line ${line}: not JSON` }]);
      }
      const parsed = ShadowLineSchema.safeParse(value);
      if (!parsed.success) {
        throw new ShadowInputError([
          {
            field: 'source.path',
            message: `line ${line}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
          },
        ]);
      }
      return parsed.data;
    });
}

async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
