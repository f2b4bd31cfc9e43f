import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectBus, type Bus, type Subscription } from '@fathom/bus';
import { Topics, envelope, type RunLifecycle, type RunShardCommand, type RunReport } from '@fathom/contracts';
import { scrapeSource, ScrapeBackoff } from '@fathom/gpu';
import { consumerGroup } from '../runtime/service-name';

interface ActiveRun {
  readonly campaignId: string;
  readonly urls: string[];
  readonly shardCount: number;
  readonly finishedShards: Set<number>;
  readonly timers: NodeJS.Timeout[];
}

/**
 * Scrapes each run's target metrics endpoints (vLLM/TGI/Triton /metrics, dcgm-exporter) while
 * the run lasts and publishes normalised samples tagged with the run. A scrape that fails is
 * published as a gap (health down/timeout/garbage, no samples) and the source backs off.
 */
@Injectable()
export class GpuCollectorService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(GpuCollectorService.name);
  private readonly runs = new Map<string, ActiveRun>();
  private readonly subscriptions: Subscription[] = [];
  private readonly intervalMs = Number(process.env.FATHOM_GPU_SCRAPE_MS ?? 1000);

  constructor(@InjectBus() private readonly bus: Bus) {}

  async onModuleInit(): Promise<void> {
    this.subscriptions.push(
      await this.bus.subscribe(
        Topics.runShard,
        { group: consumerGroup('gpu-collector', Topics.runShard) },
        (c) => this.onShard(c),
      ),
      await this.bus.subscribe(
        Topics.runLifecycle,
        { group: consumerGroup('gpu-collector', Topics.runLifecycle) },
        (e) => this.onLifecycle(e),
      ),
      await this.bus.subscribe(
        Topics.runReport,
        { group: consumerGroup('gpu-collector', Topics.runReport) },
        (r) => this.onReport(r),
      ),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.subscriptions.map((s) => s.close()));
    for (const runId of [...this.runs.keys()]) this.stop(runId);
  }

  private onShard(command: RunShardCommand): void {
    const urls = command.spec.target.metricsUrls;
    if (!urls.length || this.runs.has(command.runId)) return;
    const run: ActiveRun = {
      campaignId: command.campaignId,
      urls,
      shardCount: command.shard.count,
      finishedShards: new Set(),
      timers: [],
    };
    this.runs.set(command.runId, run);
    for (const url of urls) {
      const backoff = new ScrapeBackoff({ intervalMs: this.intervalMs, maxBackoffMs: 30_000 });
      this.schedule(command.runId, run, url, backoff, 0);
    }
  }

  private schedule(
    runId: string,
    run: ActiveRun,
    url: string,
    backoff: ScrapeBackoff,
    delayMs: number,
  ): void {
    const timer = setTimeout(async () => {
      if (!this.runs.has(runId)) return;
      const timeoutMs = Math.max(250, Math.min(5000, this.intervalMs * 2));
      const result = await scrapeSource({ url, format: 'auto', timeoutMs });
      await this.bus
        .publish(Topics.gpuTelemetry, {
          ...envelope(run.campaignId, runId),
          source: result.samples[0]?.source ?? 'unknown',
          url,
          scrapedAt: Date.now(),
          health: result.health,
          error: result.error,
          samples: result.samples.map(({ gpu, instance, metric, value, unit }) => ({
            gpu,
            instance,
            metric,
            value,
            unit,
          })),
        })
        .catch((error: Error) => this.logger.error(`gpu telemetry publish failed: ${error.message}`));
      const next = backoff.record(result.health);
      if (result.health !== 'ok')
        this.logger.warn(`scrape ${url}: ${result.health} ${result.error ?? ''}; next in ${next} ms`);
      this.schedule(runId, run, url, backoff, next);
    }, delayMs);
    run.timers.push(timer);
    if (run.timers.length > 64) run.timers.splice(0, run.timers.length - 64);
  }

  private onLifecycle(event: RunLifecycle): void {
    if (event.phase === 'shard-started') return;
    const run = this.runs.get(event.runId);
    if (!run) return;
    run.finishedShards.add(event.shard.index);
    if (run.finishedShards.size >= run.shardCount) this.stop(event.runId);
  }

  private onReport(report: RunReport): void {
    this.stop(report.runId);
  }

  private stop(runId: string): void {
    const run = this.runs.get(runId);
    if (!run) return;
    for (const t of run.timers) clearTimeout(t);
    this.runs.delete(runId);
  }
}
