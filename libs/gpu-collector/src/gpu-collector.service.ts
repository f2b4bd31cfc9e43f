import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectBus, consume, subscribeAll, type Bus, type Subscription } from '@fathom/bus';
import { Topics, envelope, type RunLifecycle, type RunShardCommand, type RunReport } from '@fathom/contracts';
import {
  EdgeSamplingGovernor,
  HostResourceReader,
  RunGpuDerivations,
  runNvidiaSmi,
  scrapeSource,
  ScrapeBackoff,
  type SamplingDecision,
  type ScrapeResult,
} from '@fathom/gpu';
import { isStaleShardCommand } from '@fathom/contracts';
import { GPU_COLLECTOR_SETTINGS, type GpuCollectorSettings } from './gpu-collector.settings';

/** The pseudo-URL of the local `nvidia-smi` source (FATHOM_GPU_LOCAL_NVIDIA_SMI=1). */
export const LOCAL_NVIDIA_SMI_URL = 'local:nvidia-smi';
/** Pseudo-URL of the collector's own edge-sampling events. */
export const EDGE_SAMPLING_URL = 'self:edge-sampling';

/** In reduced mode: scrape this many times less often, and keep only these metrics. */
const REDUCED_INTERVAL_FACTOR = 5;
const ESSENTIAL_METRICS = new Set([
  'gpu_util_pct',
  'fb_used_mib',
  'kv_cache_usage_ratio',
  'requests_running',
  'requests_waiting',
  'prefix_cache_hits_total',
  'prefix_cache_queries_total',
  'prefix_cache_hit_ratio',
]);

interface ActiveRun {
  readonly campaignId: string;
  readonly derivations: Map<string, RunGpuDerivations>;
  readonly urls: string[];
  readonly shardCount: number;
  readonly finishedShards: Set<number>;
  readonly timers: NodeJS.Timeout[];
}

/**
 * Scrapes each run's target metrics endpoints (vLLM/TGI/Triton /metrics, dcgm-exporter) and, with
 * FATHOM_GPU_LOCAL_NVIDIA_SMI=1, the local `nvidia-smi`, while the run lasts; publishes
 * normalised samples tagged with the run, plus derived ones (KV-cache hit rate and its variance
 * over the run, memory-bandwidth saturation). A scrape that fails is published as a gap
 * (health down/timeout/garbage, no samples, consecutive failures and the backoff delay) and the
 * source backs off. Edge sampling (spec): when this host has CPU > 75 % and < 128 MB free, the
 * collector scrapes 5x less often and keeps only essential metrics, and says so in an event on
 * every active run (again when it returns to full).
 */
@Injectable()
export class GpuCollectorService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(GpuCollectorService.name);
  private readonly runs = new Map<string, ActiveRun>();
  private readonly subscriptions: Subscription[] = [];
  private readonly intervalMs: number;
  private readonly localNvidiaSmi: boolean;
  private readonly governor = new EdgeSamplingGovernor();
  private readonly host = new HostResourceReader();
  private edgeTimer: NodeJS.Timeout | null = null;

  constructor(
    @InjectBus() private readonly bus: Bus,
    @Inject(GPU_COLLECTOR_SETTINGS) settings: GpuCollectorSettings,
  ) {
    this.intervalMs = settings.FATHOM_GPU_SCRAPE_MS;
    this.localNvidiaSmi = settings.FATHOM_GPU_LOCAL_NVIDIA_SMI === '1';
  }

  async onModuleInit(): Promise<void> {
    this.subscriptions.push(
      ...(await subscribeAll(this.bus, 'gpu-collector', [
        consume(Topics.runShard, (c) => this.onShard(c), { fromBeginning: true }),
        consume(Topics.runLifecycle, (e) => this.onLifecycle(e)),
        consume(Topics.runReport, (r) => this.onReport(r)),
      ])),
    );
    this.edgeTimer = setInterval(() => void this.evaluateEdgeSampling(), 1000);
    this.edgeTimer.unref();
  }

  /** Reads this host once and, when the sampling mode switched, says so on every active run. */
  async evaluateEdgeSampling(): Promise<SamplingDecision> {
    const reading = this.host.read();
    const decision = this.governor.evaluate(reading);
    if (decision.changed) {
      this.logger.warn(`edge sampling: ${decision.mode} (${decision.reason})`);
      await Promise.all(
        [...this.runs.entries()].map(([runId, run]) =>
          this.bus
            .publish(Topics.gpuTelemetry, {
              ...envelope(run.campaignId, runId),
              source: 'fathom-gpu-collector',
              url: EDGE_SAMPLING_URL,
              scrapedAt: reading.atMs,
              health: 'ok',
              samples: [
                {
                  gpu: 'collector-host',
                  instance: null,
                  metric: 'collector_cpu_pct',
                  value: reading.cpuPct,
                  unit: 'pct',
                },
                {
                  gpu: 'collector-host',
                  instance: null,
                  metric: 'collector_free_mem_mib',
                  value: reading.freeMemBytes / 1048576,
                  unit: 'MiB',
                },
              ],
              sampling: { mode: decision.mode, changed: true, reason: decision.reason },
            })
            .catch((error: Error) =>
              this.logger.error(`edge-sampling event publish failed: ${error.message}`),
            ),
        ),
      );
    }
    return decision;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.edgeTimer) clearInterval(this.edgeTimer);
    await Promise.all(this.subscriptions.map((s) => s.close()));
    for (const runId of [...this.runs.keys()]) this.stop(runId);
  }

  private onShard(command: RunShardCommand): void {
    if (isStaleShardCommand(command)) return;
    const urls = [...command.spec.target.metricsUrls, ...(this.localNvidiaSmi ? [LOCAL_NVIDIA_SMI_URL] : [])];
    if (!urls.length || this.runs.has(command.runId)) return;
    const run: ActiveRun = {
      campaignId: command.campaignId,
      derivations: new Map(),
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
    const timer = setTimeout(() => {
      this.scrapeOnce(runId, run, url, backoff).catch((error: unknown) => {
        // A scrape must never throw out of its timer; the source is tried again after a backoff.
        this.logger.error(`scrape ${url} failed: ${error instanceof Error ? error.message : String(error)}`);
        if (this.runs.has(runId)) this.schedule(runId, run, url, backoff, backoff.record('garbage'));
      });
    }, delayMs);
    run.timers.push(timer);
    if (run.timers.length > 64) run.timers.splice(0, run.timers.length - 64);
  }

  private async scrapeOnce(
    runId: string,
    run: ActiveRun,
    url: string,
    backoff: ScrapeBackoff,
  ): Promise<void> {
    if (!this.runs.has(runId)) return;
    const timeoutMs = Math.max(250, Math.min(5000, this.intervalMs * 2));
    const result: ScrapeResult =
      url === LOCAL_NVIDIA_SMI_URL
        ? await runNvidiaSmi({ timeoutMs: Math.max(timeoutMs, 5000) })
        : await scrapeSource({ url, format: 'auto', timeoutMs });
    const scrapedAt = Date.now();
    const reduced = this.governor.mode === 'reduced';
    const kept = reduced ? result.samples.filter((s) => ESSENTIAL_METRICS.has(s.metric)) : result.samples;
    const derivations = run.derivations.get(url) ?? new RunGpuDerivations();
    run.derivations.set(url, derivations);
    const derived = result.health === 'ok' ? derivations.observe(result.samples, scrapedAt) : [];
    let next = backoff.record(result.health);
    if (reduced && result.health === 'ok') next *= REDUCED_INTERVAL_FACTOR;
    await this.bus
      .publish(Topics.gpuTelemetry, {
        ...envelope(run.campaignId, runId),
        source: result.samples[0]?.source ?? (url === LOCAL_NVIDIA_SMI_URL ? 'nvidia-smi' : 'unknown'),
        url,
        scrapedAt,
        health: result.health,
        error: result.error,
        samples: [
          ...kept.map(({ gpu, instance, metric, value, unit }) => ({ gpu, instance, metric, value, unit })),
          ...derived,
        ],
        consecutiveFailures: backoff.consecutiveFailures,
        nextScrapeInMs: next,
        ...(reduced
          ? {
              sampling: {
                mode: 'reduced' as const,
                changed: false,
                reason: 'edge sampling: essential metrics only',
              },
            }
          : {}),
      })
      .catch((error: Error) => this.logger.error(`gpu telemetry publish failed: ${error.message}`));
    if (result.health !== 'ok')
      this.logger.warn(`scrape ${url}: ${result.health} ${result.error ?? ''}; next in ${next} ms`);
    this.schedule(runId, run, url, backoff, next);
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
