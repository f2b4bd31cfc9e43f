import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectBus, consume, subscribeAll, type Bus, type Subscription } from '@fathom/bus';
import {
  Topics,
  envelope,
  type RunLifecycle,
  type RunShardCommand,
  type ShardCounts,
} from '@fathom/contracts';
import { isStaleShardCommand } from '@fathom/contracts';
import { TelemetryPublisher } from './telemetry.publisher';
import { LoadMetrics } from './load.metrics';
import { METRICS_REGISTRY } from '@fathom/observability';
import type { Registry } from 'prom-client';
import { probeTarget, withResolvedModel } from './target-probe';
import { SHARD_ENGINE, type ShardEngine } from './engine-thread.config';
import type { ShardEngineRun } from './engine-thread';
import { ShardControls } from './shard-controls';
import { LOAD_GENERATOR_SETTINGS, type LoadGeneratorSettings } from './load-generator.settings';

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
 * while open) and GPU telemetry (the adaptive profile's memory reading). The engine runs where `SHARD_ENGINE` says: on its own worker
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

  constructor(
    @InjectBus() private readonly bus: Bus,
    @Inject(METRICS_REGISTRY) registry: Registry,
    @Inject(SHARD_ENGINE) private readonly engine: ShardEngine,
    @Inject(LOAD_GENERATOR_SETTINGS) settings: LoadGeneratorSettings,
  ) {
    this.generatorId = settings.FATHOM_GENERATOR_ID;
    this.metrics = new LoadMetrics(registry);
  }

  /** Resolves once the engine the next shard takes is loaded (a host may wait before a run). */
  warm(): Promise<void> {
    return this.engine.warm();
  }

  async onModuleInit(): Promise<void> {
    void this.engine.warm();
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
    await this.engine.close();
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

  private async execute(
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
    const lifecycle = (
      phase: RunLifecycle['phase'],
      counts: ShardCounts,
      reason?: string,
      endReason?: RunLifecycle['endReason'],
    ) =>
      this.bus.publish(Topics.runLifecycle, {
        ...envelope(campaignId, runId),
        phase,
        shard,
        generatorId: this.generatorId,
        counts,
        reason,
        ...(endReason ? { endReason } : {}),
      });

    const probe = await probeTarget(command.spec.target.baseUrl, {
      timeoutMs: Math.min(5000, command.spec.load.requestTimeoutMs),
    });
    const spec = probe.reachable ? withResolvedModel(command.spec, probe.models, probe.lookup) : probe.reason;
    if (typeof spec === 'string') {
      this.logger.warn(`run ${runId} shard ${shard.index}: ${spec}`);
      await lifecycle('shard-failed', empty, spec);
      return;
    }
    let engine: ShardEngineRun;
    try {
      engine = this.engine.run({
        spec,
        shard,
        runId,
        campaignId,
        generatorId: this.generatorId,
        sink: publisher,
        signal: abort.signal,
        controls,
      });
      await engine.ready;
    } catch (error) {
      const reason = `load engine failed: ${(error as Error).message}`;
      this.logger.error(`run ${runId} shard ${shard.index}: ${reason}`);
      await publisher.drain();
      await lifecycle('shard-failed', empty, reason);
      return;
    }
    await lifecycle('shard-started', empty);
    try {
      const counts = await engine.start();
      await publisher.drain();
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
      );
    } catch (error) {
      await publisher.drain();
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
