import { Counter, Gauge, type Metric, type Registry } from 'prom-client';
import type { BreakerChange, BreakerState, MeasurementValidity, TelemetryWindow } from '@fathom/contracts';
import { countsAtOrBelowUs, decodeHistogram } from '@fathom/load';

/** Runs whose series are kept; the oldest run's series go when one more starts (bounded cardinality). */
export const RUN_METRICS_MAX_RUNS = 16;

/** Bucket bounds of the latency histograms, seconds: 5 ms (fast TTFT) to 60 s (long generations). */
export const RUN_LATENCY_BUCKETS_S = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.8, 1, 1.2, 2.5, 5, 10, 30, 60,
];
const BOUNDS_US = RUN_LATENCY_BUCKETS_S.map((s) => Math.round(s * 1e6));

const HISTOGRAMS = { e2e: 'e2e', correctedE2e: 'corrected_e2e', ttft: 'ttft', itl: 'itl' } as const;

/** Breaker state as a number a panel can plot (and alert on: > 0 is not closed). */
export const BREAKER_STATE_VALUE: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 };

interface LatencySeries {
  labels: { run_id: string; metric: string };
  buckets: number[];
  sumSeconds: number;
  count: number;
}

/**
 * `fathom_run_latency_seconds{run_id, metric}`: a Prometheus histogram fed from whole HDR windows
 * (prom-client's Histogram takes one value at a time; a window carries thousands), so the
 * analyzer never touches single requests. Implements prom-client's metric shape (`get()`).
 */
class WindowLatencyHistogram {
  readonly name = 'fathom_run_latency_seconds';
  readonly help =
    "Latency of the requests of a run, from the load-generators' windows: metric = e2e, corrected_e2e (from the intended start), ttft, itl";
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, LatencySeries>();

  add(runId: string, window: TelemetryWindow): void {
    for (const [field, metric] of Object.entries(HISTOGRAMS)) {
      const histogram = decodeHistogram(window.histogramsUs[field as keyof typeof HISTOGRAMS]);
      if (!histogram.totalCount) continue;
      const key = `${runId}\u0000${metric}`;
      let series = this.series.get(key);
      if (!series) {
        series = {
          labels: { run_id: runId, metric },
          buckets: BOUNDS_US.map(() => 0),
          sumSeconds: 0,
          count: 0,
        };
        this.series.set(key, series);
      }
      const { counts, sumUs } = countsAtOrBelowUs(histogram, BOUNDS_US);
      counts.forEach((n, i) => (series.buckets[i] += n));
      series.sumSeconds += sumUs / 1e6;
      series.count += histogram.totalCount;
    }
  }

  removeRun(runId: string): void {
    for (const key of [...this.series.keys()]) if (key.startsWith(`${runId}\u0000`)) this.series.delete(key);
  }

  async get() {
    const values = [...this.series.values()].flatMap(({ labels, buckets, sumSeconds, count }) => [
      ...buckets.map((n, i) => ({
        metricName: `${this.name}_bucket`,
        labels: { ...labels, le: RUN_LATENCY_BUCKETS_S[i] },
        value: n,
      })),
      { metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: count },
      { metricName: `${this.name}_sum`, labels, value: sumSeconds },
      { metricName: `${this.name}_count`, labels, value: count },
    ]);
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.series.clear();
  }
}

/**
 * The analyzer's live measurements of each run on `/metrics` (beside the load-generators'
 * `fathom_load_*`): latency histograms, requests, errors by class, late and dropped iterations,
 * the current SLO tier, breaker states and the final validity. Series are per `run_id`, kept for
 * the newest 16 runs. Invariant: a window is counted once (the caller passes only newly stored ones).
 */
export class RunMetrics {
  private readonly latency = new WindowLatencyHistogram();
  private readonly requests: Counter<'run_id'>;
  private readonly errors: Counter<'run_id' | 'error_class'>;
  private readonly late: Counter<'run_id'>;
  private readonly dropped: Counter<'run_id'>;
  private readonly outputTokens: Counter<'run_id'>;
  private readonly tier: Gauge<'run_id' | 'tier'>;
  private readonly breaker: Gauge<'run_id' | 'target' | 'layer' | 'node'>;
  private readonly valid: Gauge<'run_id'>;
  /** Runs with series, oldest first, and the label sets each added to a labelled metric. */
  private readonly runs = new Map<
    string,
    Array<{ metric: Counter<string> | Gauge<string>; labels: Record<string, string> }>
  >();

  constructor(registry: Registry) {
    registry.registerMetric(this.latency as unknown as Metric);
    const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Counter<L>({ name, help, labelNames, registers: [registry] });
    const gauge = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Gauge<L>({ name, help, labelNames, registers: [registry] });
    this.requests = counter('fathom_run_requests_total', 'Requests of a run finished (ok or not)', [
      'run_id',
    ]);
    this.errors = counter('fathom_run_errors_total', 'Failed requests of a run, by error class', [
      'run_id',
      'error_class',
    ]);
    this.late = counter(
      'fathom_run_late_iterations_total',
      'Iterations of a run that started later than scheduled (open-model profiles)',
      ['run_id'],
    );
    this.dropped = counter(
      'fathom_run_dropped_iterations_total',
      'Iterations of a run that could not start in time (the generator fell behind)',
      ['run_id'],
    );
    this.outputTokens = counter('fathom_run_output_tokens_total', 'Output tokens received in a run', [
      'run_id',
    ]);
    this.tier = gauge('fathom_run_tier', "1 for a run's current SLO tier, 0 for the tiers it left", [
      'run_id',
      'tier',
    ]);
    this.breaker = gauge('fathom_breaker_state', 'Circuit breaker state: 0 closed, 1 half-open, 2 open', [
      'run_id',
      'target',
      'layer',
      'node',
    ]);
    this.valid = gauge(
      'fathom_run_valid',
      'Measurement validity of an ended run: 1 valid, 0 not (generator bottleneck, token-count mismatch, no steady state)',
      ['run_id'],
    );
  }

  observeWindow(window: TelemetryWindow): void {
    const run_id = window.runId;
    this.latency.add(run_id, window);
    this.inc(this.requests, { run_id }, window.requests);
    for (const [error_class, n] of Object.entries(window.errorClasses))
      this.inc(this.errors, { run_id, error_class }, n);
    this.inc(this.late, { run_id }, window.late);
    this.inc(this.dropped, { run_id }, window.dropped);
    this.inc(this.outputTokens, { run_id }, window.outputTokens);
  }

  tierChanged(runId: string, from: string | null, to: string): void {
    if (from !== null) this.set(this.tier, { run_id: runId, tier: from }, 0);
    this.set(this.tier, { run_id: runId, tier: to }, 1);
  }

  breakerChanged(change: BreakerChange): void {
    const { target, layer, node } = change.breaker;
    this.set(this.breaker, { run_id: change.runId, target, layer, node }, BREAKER_STATE_VALUE[change.to]);
  }

  /**
   * The run was reported: its validity, and its tier becomes the report's whole-run tier (null:
   * none, e.g. no request to judge), so the gauge agrees with the summary once the run ended,
   * also for a run too short for a live tier.
   */
  reported(runId: string, validity: MeasurementValidity, tier: string | null): void {
    this.set(this.valid, { run_id: runId }, validity.valid ? 1 : 0);
    for (const { metric, labels } of this.runs.get(runId) ?? [])
      if (metric === this.tier && labels.tier !== tier) this.tier.set(labels, 0);
    if (tier !== null) this.set(this.tier, { run_id: runId, tier }, 1);
  }

  private inc(metric: Counter<string>, labels: Record<string, string>, n: number): void {
    this.track(metric, labels);
    metric.inc(labels, n);
  }

  private set(metric: Gauge<string>, labels: Record<string, string>, value: number): void {
    this.track(metric, labels);
    metric.set(labels, value);
  }

  private track(metric: Counter<string> | Gauge<string>, labels: Record<string, string>): void {
    let added = this.runs.get(labels.run_id);
    if (!added) {
      added = [];
      this.runs.set(labels.run_id, added);
      while (this.runs.size > RUN_METRICS_MAX_RUNS) this.forget(this.runs.keys().next().value!);
    }
    const key = JSON.stringify(labels);
    if (!added.some((a) => a.metric === metric && JSON.stringify(a.labels) === key))
      added.push({ metric, labels });
  }

  private forget(runId: string): void {
    for (const { metric, labels } of this.runs.get(runId) ?? []) metric.remove(labels);
    this.latency.removeRun(runId);
    this.runs.delete(runId);
  }
}
