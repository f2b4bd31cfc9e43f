import { renderReportHtml } from './report-html.render';
import { fixtureReport } from './report-document.test-util';

const ASSETS = { uplotJs: 'var uPlot = function () {};', uplotCss: '.uplot{}' };

describe(renderReportHtml.name, () => {
  const doc = fixtureReport({
    latencyMs: () => 100,
    detectorMessage: '<img src=x onerror=alert(1)></script>',
  });
  const sut = renderReportHtml(doc, ASSETS);

  it('puts every section in the page, the verdict first', () => {
    const ids = [...sut.matchAll(/<section id="([\w-]+)"/g)].map((m) => m[1]);
    expect(ids).toEqual([
      'verdict',
      'latency',
      'throughput',
      'distributions',
      'tokens',
      'gpu',
      'root-causes',
      'semantic',
      'spec',
    ]);
    // The fixture's whole run misses SLO-0 (corrected P99 985.6 ms > 800 ms): its tier is SLO-1,
    // as its own objectives say, whatever tier its last change during the run named.
    expect(sut).toContain('data-slo="passed" data-tier="SLO-1" data-valid="true"');
  });

  it('escapes what targets and detectors wrote and redacts the spec', () => {
    expect(sut).not.toContain('<img src=x');
    expect(sut).toContain('&lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;');
    expect(sut).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(sut).not.toContain('sk-secret');
    // The data element cannot be closed by data: every '<' in it is escaped.
    const data = /<script type="application\/json" id="fathom-data">([^]*?)<\/script>/.exec(sut)![1];
    expect(data).not.toContain('<');
    expect(JSON.parse(data).t).toHaveLength(10);
  });

  it('marks a cause threshold derived on the simulator only beside the cause', () => {
    const cause = {
      kind: 'retrieval-mismatch',
      title: 'retrieved documents do not match their queries',
      confidence: 0.8,
      since: doc.summary.startedAt ?? 0,
      until: doc.summary.startedAt ?? 0,
      evidence: ['54/72 pairs over KL'],
      figures: {},
      advice: ['re-embed'],
      namedAt: 0,
      thresholds: [
        { name: 'KL threshold (nats)', value: 0.00117, source: 'simulator' as const, note: 'set on the sim' },
        { name: 'share of calls', value: 0.005, source: 'spec' as const, note: 'tier SLO-1' },
      ],
    };
    const page = renderReportHtml({ ...doc, rootCauses: [cause] }, ASSETS);
    expect(page).toContain(
      '<li>KL threshold (nats) 0.00117: <strong>derived on the simulator only</strong> (set on the sim)</li>',
    );
    expect(page).toContain('<li>share of calls 0.005: the spec (tier SLO-1)</li>');
  });

  it('needs no network: no external source, link or stylesheet, and a CSP that forbids fetches', () => {
    expect(sut).not.toMatch(/<(script|img|link|iframe)[^>]+(src|href)=/i);
    expect(sut).toContain("default-src 'none'");
  });

  it('keeps four digits of a threshold below 1', () => {
    expect(sut).toMatch(/<td>availability<\/td><td>1<\/td><td>0\.9995<\/td>/);
  });

  it('shows TPOT when the summary carries it', () => {
    const { tpot: _absent, ...older } = doc.summary.latencyMs as typeof doc.summary.latencyMs & {
      tpot?: unknown;
    };
    const withoutTpot = renderReportHtml({ ...doc, summary: { ...doc.summary, latencyMs: older } }, ASSETS);
    expect(withoutTpot).not.toContain('TPOT P50');
    const latencyMs = {
      ...doc.summary.latencyMs,
      tpot: { count: 1, mean: 4, p50: 4, p95: 5, p99: 6, max: 6 },
    };
    const withTpot = renderReportHtml({ ...doc, summary: { ...doc.summary, latencyMs } }, ASSETS);
    expect(withTpot).toContain('<th>TPOT P50 / P99</th><td>4.0 ms / 6.0 ms</td>');
    const loopback = {
      ...latencyMs,
      tpot: { count: 1, mean: 0.05, p50: 0.042, p95: 0.9, p99: 1.25, max: 2 },
    };
    const subMs = renderReportHtml({ ...doc, summary: { ...doc.summary, latencyMs: loopback } }, ASSETS);
    expect(subMs).toContain('<th>TPOT P50 / P99</th><td>0.042 ms / 1.3 ms</td>');
    const generator = {
      windows: 8,
      loopUtilizationMedian: 0.57,
      loopDelayP99MaxMs: 16.4,
      coreWaitShareMedian: 0.07,
    };
    const withHealth = renderReportHtml({ ...doc, validity: { ...doc.validity, generator } }, ASSETS);
    expect(withHealth).toContain(
      '<tr id="generator-health"><th>generator: engine busy (median of 8 windows)</th><td>57 %</td>' +
        '<th>engine waited for its core</th><td>7 %</td><th>event-loop delay P99 (max)</th><td>16.4 ms</td></tr>',
    );
    const onCore = renderReportHtml(
      { ...doc, validity: { ...doc.validity, generator: { ...generator, coreRunShareMedian: 0.5 } } },
      ASSETS,
    );
    expect(onCore).toContain(
      '<td>57 % (on its core 50 %)</td><th>engine waited for its core</th><td>7 %</td>',
    );
    expect(renderReportHtml({ ...doc, validity: { valid: true, reasons: [] } }, ASSETS)).not.toContain(
      'generator-health',
    );
  });

  it('lists the LLM monitor’s semantic anomalies under their own title, with their labels', () => {
    const finding = {
      detector: 'semantic-anomaly',
      count: 2,
      bySeverity: { warning: 2 },
      firstAt: 1,
      lastAt: 2,
      examples: [
        {
          at: 2,
          severity: 'warning',
          message: 'semantic anomaly in the response: refusal (model confidence 0.97): "I must decline"',
          figures: { confidence: 0.97, ruleHit: 0, cached: 0 },
          labels: { label: 'refusal', decidedBy: 'model', fragment: 'response' },
        },
      ],
    };
    const series = { ...doc.series!, semanticFindings: [...doc.series!.semanticFindings, finding] };
    const html = renderReportHtml({ ...doc, series }, ASSETS);
    expect(html).toContain(
      '<div class="finding" data-detector="semantic-anomaly"><h3>Semantic anomalies (LLM monitor) <small>2 signals (2 warning)</small></h3>',
    );
    expect(html).toContain('label=refusal decidedBy=model fragment=response');
  });

  it('says so when a report predates the time series', () => {
    const old = renderReportHtml({ ...doc, series: undefined, campaign: undefined }, ASSETS);
    expect(old).toContain('made before reports carried their time series');
    expect(old).toContain('data-slo="passed"');
  });

  it('shows assertion coverage and each step with its SLA misses for a steps run', () => {
    const steps = {
      ...doc,
      summary: {
        ...doc.summary,
        assertions: {
          declared: 2,
          ran: 1,
          passed: 0,
          failed: 1,
          neverRan: 1,
          byName: [
            { name: 'gen.ok', declared: true, state: 'failed' as const, passes: 7, failures: 3 },
            { name: 'chat.ok', declared: true, state: 'never-ran' as const, passes: 0, failures: 0 },
          ],
        },
        steps: [
          {
            name: 'gen',
            kind: 'grpc' as const,
            budgetMs: 50,
            concurrency: 2,
            runs: 10,
            failed: 3,
            skipped: 0,
            slaMisses: 4,
            latencyMeanMs: 40,
            latencyMaxMs: 90,
            firstMessageMeanMs: 5,
            messages: 30,
          },
        ],
      },
    };
    const html = renderReportHtml(steps, ASSETS);
    const section = /<section id="steps">([^]*?)<\/section>/.exec(html)![1];
    expect(section).toContain('1/2 declared assertions ran (50 %): 0 passed, 1 failed, 1 never ran');
    expect(section).toMatch(
      /<tr class="bad"><td>gen.ok<\/td><td>yes<\/td><td>failed<\/td><td>7<\/td><td>3<\/td>/,
    );
    expect(section).toContain('<td>chat.ok</td><td>yes</td><td>never-ran</td>');
    expect(section).toMatch(
      /<td>gen<\/td><td>grpc<\/td><td>10<\/td><td>3<\/td><td>0<\/td><td>[^<]+<\/td><td>4<\/td>/,
    );
  });
});
