import { Registry } from 'prom-client';
import type { BreakerChange, TelemetryWindow } from '@fathom/contracts';
import { encodeHistogram, newLatencyHistogram, recordMs } from '@fathom/load';
import { RUN_METRICS_MAX_RUNS, RunMetrics } from './run.metrics';

const histogram = (valuesMs: number[]) => {
  const h = newLatencyHistogram();
  for (const v of valuesMs) recordMs(h, v);
  return encodeHistogram(h);
};

function window(
  runId: string,
  id: string,
  e2eMs: number[],
  extra: Partial<TelemetryWindow> = {},
): TelemetryWindow {
  return {
    id,
    campaignId: 'c',
    runId,
    schemaVersion: 1,
    emittedAt: 0,
    generatorId: 'g',
    shard: 0,
    windowStart: 0,
    windowMs: 1000,
    seq: 0,
    requests: e2eMs.length,
    errors: 0,
    errorClasses: {},
    dropped: 0,
    late: 0,
    inputTokens: 0,
    outputTokens: 10,
    histogramsUs: {
      e2e: histogram(e2eMs),
      correctedE2e: histogram(e2eMs),
      ttft: histogram(e2eMs.map((v) => v / 10)),
      itl: histogram([]),
    },
    ...extra,
  };
}

describe(RunMetrics.name, () => {
  let registry: Registry;
  let sut: RunMetrics;
  beforeEach(() => {
    registry = new Registry();
    sut = new RunMetrics(registry);
  });

  it("exposes a run's windows as a Prometheus latency histogram with requests and errors", async () => {
    sut.observeWindow(window('r1', 'w1', [20, 300, 300]));
    sut.observeWindow(
      window('r1', 'w2', [900, 3000], { errors: 1, errorClasses: { timeout: 1 }, late: 2, dropped: 1 }),
    );

    const text = await registry.metrics();
    expect(text).toContain('# TYPE fathom_run_latency_seconds histogram');
    expect(text).toContain('fathom_run_latency_seconds_bucket{run_id="r1",metric="e2e",le="0.025"} 1');
    expect(text).toContain('fathom_run_latency_seconds_bucket{run_id="r1",metric="e2e",le="0.5"} 3');
    expect(text).toContain('fathom_run_latency_seconds_bucket{run_id="r1",metric="e2e",le="1"} 4');
    expect(text).toContain('fathom_run_latency_seconds_bucket{run_id="r1",metric="e2e",le="+Inf"} 5');
    expect(text).toContain('fathom_run_latency_seconds_count{run_id="r1",metric="ttft"} 5');
    expect(text).not.toContain('metric="itl"'); // no inter-token gaps recorded
    const sum = Number(/fathom_run_latency_seconds_sum\{run_id="r1",metric="e2e"\} ([\d.]+)/.exec(text)![1]);
    expect(sum).toBeCloseTo(4.52, 2);
    expect(text).toContain('fathom_run_requests_total{run_id="r1"} 5');
    expect(text).toContain('fathom_run_errors_total{run_id="r1",error_class="timeout"} 1');
    expect(text).toContain('fathom_run_late_iterations_total{run_id="r1"} 2');
    expect(text).toContain('fathom_run_dropped_iterations_total{run_id="r1"} 1');
    expect(text).toContain('fathom_run_output_tokens_total{run_id="r1"} 20');
  });

  it('marks the current tier, breaker states and the validity of an ended run', async () => {
    sut.tierChanged('r1', null, 'SLO-0');
    sut.tierChanged('r1', 'SLO-0', 'SLO-1');
    const breaker = (to: BreakerChange['to']): BreakerChange => ({
      id: to,
      campaignId: 'c',
      runId: 'r1',
      schemaVersion: 1,
      emittedAt: 0,
      breaker: { target: 'http://t/v1', layer: 'llm', node: 't:80' },
      from: 'closed',
      to,
      reason: 'x',
    });
    sut.breakerChanged(breaker('open'));
    let text = await registry.metrics();
    expect(text).toContain('fathom_run_tier{run_id="r1",tier="SLO-0"} 0');
    expect(text).toContain('fathom_run_tier{run_id="r1",tier="SLO-1"} 1');
    // Ended: the gauge shows the report's whole-run tier, and the live ones at 0.
    sut.reported('r1', { valid: false, reasons: [] }, 'SLO-breach');
    text = await registry.metrics();
    expect(text).toContain('fathom_run_tier{run_id="r1",tier="SLO-1"} 0');
    expect(text).toContain('fathom_run_tier{run_id="r1",tier="SLO-breach"} 1');
    // A run too short for a live tier gets its whole-run one at the end.
    sut.reported('r2', { valid: true, reasons: [] }, 'SLO-0');
    expect(await registry.metrics()).toContain('fathom_run_tier{run_id="r2",tier="SLO-0"} 1');
    expect(text).toContain(
      'fathom_breaker_state{run_id="r1",target="http://t/v1",layer="llm",node="t:80"} 2',
    );
    expect(text).toContain('fathom_run_valid{run_id="r1"} 0');
    sut.breakerChanged(breaker('half-open'));
    expect(await registry.metrics()).toContain('node="t:80"} 1');
  });

  it(`keeps the series of the newest ${RUN_METRICS_MAX_RUNS} runs only`, async () => {
    for (let i = 0; i <= RUN_METRICS_MAX_RUNS; i++) {
      sut.observeWindow(window(`r${i}`, `w${i}`, [10]));
      sut.tierChanged(`r${i}`, null, 'SLO-0');
    }
    const text = await registry.metrics();
    expect(text).not.toContain('run_id="r0"');
    expect(text).toContain(`fathom_run_requests_total{run_id="r${RUN_METRICS_MAX_RUNS}"} 1`);
    expect(text).toContain('fathom_run_latency_seconds_count{run_id="r1",metric="e2e"} 1');
    expect(text.match(/^fathom_run_requests_total\{/gm)).toHaveLength(RUN_METRICS_MAX_RUNS);
  });
});
