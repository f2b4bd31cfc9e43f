import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { InjectBus, consume, subscribeAll, type Bus, type Subscription } from '@fathom/bus';
import {
  Topics,
  envelope,
  type RunLifecycle,
  type RunShardCommand,
  type CampaignSpec,
  type ShardCounts,
} from '@fathom/contracts';
import { isStaleShardCommand } from '@fathom/contracts';
import { resolveSecrets, SecretResolutionError, type SecretSources } from '@fathom/load';
import { TelemetryPublisher } from './telemetry.publisher';
import { LoadMetrics } from './load.metrics';
import { METRICS_REGISTRY, type GenAiClientTelemetry } from '@fathom/observability';
import { GENAI_TELEMETRY, withGenAiTelemetry } from './genai.sink';
import type { Registry } from 'prom-client';
import { probeTarget, withResolvedModel, type TargetProbe } from './target-probe';
import { ShardSlots } from './shard-slots';
import { SHARD_HOST, type ShardHost } from './engine-thread.config';
import type { HostedShard } from './engine-thread';
import { ShardControls } from './shard-controls';
import { LOAD_GENERATOR_SETTINGS, type LoadGeneratorSettings } from './load-generator.settings';
import { publishPatiently } from './publish-patiently.util';

/**
 * How long a shard's telemetry and its end event keep being resent while the bus refuses them
 * (broker down), ms: past a broker restart, inside the analyzer's silence bound.
 */
const BUS_PATIENCE_MS = 120_000;

interface ActiveShard {
  readonly abort: AbortController;
  readonly done: Promise<void>;
  readonly controls: ShardControls;
}

/**
 * Takes shards from the load-generators' consumer group and runs them. A shard runs in the
 * background: the handler returns as soon as it started, so a long run never holds the
 * consumer (and its group membership) hostage. Aborts arrive on a broadcast topic that each
 * generator reads in its own group, as do breaker changes (whose paths the shard stops sending on
 * while open) and GPU telemetry (the adaptive profile's memory reading). The engine runs where `SHARD_HOST` says: on its own worker
 * thread by default (FATHOM_ENGINE_THREAD); its records and windows reach the publisher here.
 */
@Injectable()
export class ShardRunnerService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ShardRunnerService.name);
  readonly generatorId: string;
  private readonly active = new Map<string, ActiveShard>();
  /** Shards already taken by this process (a redelivered command must not start a second run). */
  private readonly taken = new Set<string>();
  private readonly aborted = new Set<string>();
  private readonly subscriptions: Subscription[] = [];

  private readonly metrics: LoadMetrics;
  private readonly secretSources: SecretSources;
  /** FATHOM_MAX_ACTIVE_SHARDS (default twice the cores, at least 8): the rest wait their turn. */
  private readonly slots: ShardSlots;

  constructor(
    @InjectBus() private readonly bus: Bus,
    @Inject(METRICS_REGISTRY) registry: Registry,
    @Inject(SHARD_HOST) private readonly host: ShardHost,
    @Inject(LOAD_GENERATOR_SETTINGS) settings: LoadGeneratorSettings,
    @Optional() @Inject(GENAI_TELEMETRY) private readonly genAi: GenAiClientTelemetry | null = null,
  ) {
    this.generatorId = settings.FATHOM_GENERATOR_ID;
    this.metrics = new LoadMetrics(registry);
    genAi?.edge?.countInto(registry);
    this.slots = new ShardSlots(settings.FATHOM_MAX_ACTIVE_SHARDS);
    this.secretSources = { env: settings.secretEnv ?? {}, secretsDir: settings.FATHOM_SECRETS_DIR ?? null };
  }

  /** Resolves once the engine the next shard takes is loaded (a host may wait before a run). */
  warm(): Promise<void> {
    return this.host.warm();
  }

  async onModuleInit(): Promise<void> {
    void this.host.warm();
    this.subscriptions.push(
      ...(await subscribeAll(this.bus, 'load-generator', [
        consume(Topics.runShard, (c) => this.onShard(c), { fromBeginning: true }),
        consume(Topics.runControl, (c) => this.onAbort(c.runId), { broadcastAs: this.generatorId }),
        // Broadcast too: every generator running a shard of the run gates the breaker's paths
        // and feeds the adaptive profile the GPU memory in use.
        consume(
          Topics.breaker,
          (change) => this.controlsOf(change.runId, (controls) => controls.breaker(change)),
          { broadcastAs: this.generatorId },
        ),
        consume(
          Topics.gpuTelemetry,
          (event) => this.controlsOf(event.runId, (controls) => controls.gpuTelemetry(event)),
          { broadcastAs: this.generatorId },
        ),
      ])),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.subscriptions.map((s) => s.close()));
    for (const shard of this.active.values()) shard.abort.abort(new Error('load-generator shutting down'));
    await Promise.all([...this.active.values()].map((s) => s.done));
    await this.host.close();
    await this.genAi?.shutdown(); // pushes the last metrics and spans
  }

  private onAbort(runId: string): void {
    this.aborted.add(runId);
    for (const [key, shard] of this.active) {
      if (key.startsWith(`${runId}/`)) shard.abort.abort(new Error('run aborted'));
    }
  }

  private controlsOf(runId: string, apply: (controls: ShardControls) => void): void {
    for (const [key, shard] of this.active) if (key.startsWith(`${runId}/`)) apply(shard.controls);
  }

  private onShard(command: RunShardCommand): void {
    if (isStaleShardCommand(command)) return;
    const key = `${command.runId}/${command.shard.index}`;
    if (this.taken.has(key)) return;
    this.taken.add(key);
    const abort = new AbortController();
    if (this.aborted.has(command.runId)) abort.abort(new Error('run aborted'));
    this.metrics.activeShards.inc();
    const controls = new ShardControls();
    const done = this.execute(command, abort, controls).finally(() => {
      this.active.delete(key);
      this.metrics.activeShards.dec();
    });
    this.active.set(key, { abort, done, controls });
  }

  /** The target probe, again (up to 3 tries) while this process itself stalled through it. */
  private async probe(spec: CampaignSpec): Promise<TargetProbe> {
    // A steps scenario of gRPC and WebSocket calls only may point at a server that speaks no
    // HTTP/1.1 (a gRPC server): its own calls tell whether it is there, classified per step.
    if (
      spec.scenario.type === 'http' &&
      spec.scenario.steps.every((s) => s.kind === 'grpc' || s.kind === 'websocket')
    )
      return { reachable: true, models: [], lookup: null };
    let probe: TargetProbe = { reachable: false, reason: 'not probed' };
    for (let attempt = 0; attempt < 3; attempt++) {
      probe = await probeTarget(spec.target.baseUrl, {
        timeoutMs: Math.min(5000, spec.load.requestTimeoutMs),
      });
      if (probe.reachable !== 'unknown') return probe;
      this.logger.warn(`${probe.reason}; probing again`);
    }
    return probe;
  }

  private async execute(
    command: RunShardCommand,
    abort: AbortController,
    controls: ShardControls,
  ): Promise<void> {
    const release = await this.slots.acquire();
    try {
      await this.executeInSlot(command, abort, controls);
    } finally {
      release();
    }
  }

  private async executeInSlot(
    command: RunShardCommand,
    abort: AbortController,
    controls: ShardControls,
  ): Promise<void> {
    const { shard, runId, campaignId } = command;
    const publisher = new TelemetryPublisher(this.bus, campaignId, runId, this.generatorId, this.metrics);
    const empty: ShardCounts = {
      sent: 0,
      completed: 0,
      errors: 0,
      dropped: 0,
      recordsPublished: 0,
      windowsPublished: 0,
    };
    const lifecycle = async (
      phase: RunLifecycle['phase'],
      counts: ShardCounts,
      reason?: string,
      endReason?: RunLifecycle['endReason'],
      adversarial?: RunLifecycle['adversarial'],
    ) => {
      const event: RunLifecycle = {
        ...envelope(campaignId, runId),
        phase,
        shard,
        generatorId: this.generatorId,
        counts,
        reason,
        ...(endReason ? { endReason } : {}),
        ...(adversarial ? { adversarial } : {}),
      };
      const sent = await publishPatiently(
        () => this.bus.publish(Topics.runLifecycle, event),
        BUS_PATIENCE_MS,
        (error, attempt) => {
          if (attempt === 0)
            this.logger.warn(
              `run ${runId} shard ${shard.index}: ${phase} not published yet: ${error.message}`,
            );
        },
      );
      if (!sent)
        this.logger.error(
          `run ${runId} shard ${shard.index}: ${phase} lost: the bus refused it for ${BUS_PATIENCE_MS / 1000} s`,
        );
    };

    let withSecrets: CampaignSpec;
    try {
      // Secrets come by reference; their values exist only in this process, for this shard.
      withSecrets = await resolveSecrets(command.spec, this.secretSources);
    } catch (error) {
      const reason =
        error instanceof SecretResolutionError ? error.message : 'a secret could not be resolved';
      this.logger.warn(`run ${runId} shard ${shard.index}: ${reason}`);
      await lifecycle('shard-failed', empty, reason);
      return;
    }
    const probe = await this.probe(withSecrets);
    const spec =
      probe.reachable === true
        ? withResolvedModel(withSecrets, probe.models, probe.lookup)
        : probe.reachable === 'unknown'
          ? withResolvedModel(withSecrets, []) === withSecrets
            ? withSecrets // Nothing to ask the target for: the requests themselves will tell.
            : probe.reason
          : probe.reason;
    if (typeof spec === 'string') {
      this.logger.warn(`run ${runId} shard ${shard.index}: ${spec}`);
      await lifecycle('shard-failed', empty, spec);
      return;
    }
    let engine: HostedShard;
    try {
      engine = this.host.run({
        spec,
        shard,
        runId,
        campaignId,
        generatorId: this.generatorId,
        sink: withGenAiTelemetry(publisher, this.genAi, spec),
        signal: abort.signal,
        controls,
      });
      await engine.ready;
    } catch (error) {
      const reason = `load engine failed: ${(error as Error).message}`;
      this.logger.error(`run ${runId} shard ${shard.index}: ${reason}`);
      await publisher.drain(BUS_PATIENCE_MS);
      await lifecycle('shard-failed', empty, reason);
      return;
    }
    await lifecycle('shard-started', empty);
    try {
      const counts = await engine.start();
      await publisher.drain(BUS_PATIENCE_MS);
      const final = {
        ...counts,
        recordsPublished: publisher.recordsPublished,
        windowsPublished: publisher.windowsPublished,
      };
      await lifecycle(
        'shard-finished',
        final,
        abort.signal.aborted ? String(abort.signal.reason?.message ?? 'aborted') : counts.endDetail,
        counts.endReason,
        counts.adversarial,
      );
    } catch (error) {
      await publisher.drain(BUS_PATIENCE_MS);
      const reason = `load engine failed: ${(error as Error).message}`;
      this.logger.error(`run ${runId} shard ${shard.index}: ${reason}`);
      await lifecycle(
        'shard-failed',
        {
          ...empty,
          recordsPublished: publisher.recordsPublished,
          windowsPublished: publisher.windowsPublished,
        },
        reason,
      );
    }
  }
}
