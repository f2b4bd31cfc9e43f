import type { MetricComparison, ShadowMetric, ShadowWindowReport } from '@fathom/contracts';
import { renderShadowReportHtml, type ShadowReportInput } from './shadow-report-html.render';

const ALL: ShadowMetric[] = [
  'e2eMs',
  'ttftMs',
  'dissimilarity',
  'hallucinationRisk',
  'errorRate',
  'toolCalls',
  'toolArguments',
  'schemaViolations',
  'refusals',
];

function window(i: number, beyond: Partial<Record<ShadowMetric, number>>): ShadowWindowReport {
  const metrics: MetricComparison[] = ALL.map((metric) => ({
    metric,
    noiseFloor: metric === 'e2eMs' ? 5 : 0,
    candidateDifference: beyond[metric] ?? 0,
    // Nothing declared a schema and no embeddings: those are not compared.
    samples: metric === 'schemaViolations' || metric === 'dissimilarity' ? 0 : 8,
    beyondNoise: beyond[metric] !== undefined,
  }));
  return {
    startedAt: 1_800_000_000_000 + i * 60_000,
    endedAt: 1_800_000_060_000 + i * 60_000,
    samples: 8,
    groups: [
      {
        endpoint: '/v1/chat/completions',
        intent: '<b>orders</b>',
        samples: 8,
        metrics,
        differences: metrics.filter((m) => m.beyondNoise),
      },
    ],
    regressed: Object.keys(beyond).length > 0,
  };
}

const windows = [
  window(0, {}),
  window(1, { toolArguments: 0.75 }),
  window(2, { toolArguments: 1, refusals: 0.5 }),
];
const campaign: ShadowReportInput = {
  id: 'c-1',
  name: 'candidate v2 <script>alert(1)</script>',
  status: 'running',
  reason: null,
  createdAt: 1_800_000_000_000,
  endedAt: null,
  targets: { primary: 'http://p:8000/v1', secondary: 'http://s:8000/v1', candidate: 'http://c:8000/v1' },
  report: {
    samples: 24,
    similarity: 'not configured',
    groups: windows[2].groups,
    live: {
      offered: 100,
      replayed: 24,
      shed: { sampled: 50, rate: 20, concurrency: 5, breaker: 1, analyzerBreaker: 7 },
      candidateBreaker: 'closed',
      analyzerBreaker: {
        state: 'open',
        changes: [
          {
            at: windows[2].endedAt,
            from: 'closed',
            to: 'open',
            reason: 'shadow-regression: toolArguments +1',
          },
        ],
      },
      tier: 'regressed',
      linkedRuns: ['run-9'],
      windows: [...windows, { startedAt: 1, endedAt: 2, samples: 0, groups: [], regressed: false }],
      hours: [],
    },
  },
};

describe(renderShadowReportHtml.name, () => {
  const sut = renderShadowReportHtml(campaign);

  it('is one page that fetches nothing and runs no script', () => {
    expect(sut).toContain(
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
    );
    expect(sut).not.toMatch(/<script|<link|src="http/);
  });

  it('shows the verdict, what was shed, the windows, the breaker and the groups', () => {
    const ids = [...sut.matchAll(/<section id="([\w-]+)"/g)].map((m) => m[1]);
    expect(ids).toEqual(['verdict', 'charts', 'windows', 'hours', 'breaker', 'groups']);
    expect(sut).toContain('<span>Tier</span><b>regressed</b>');
    expect(sut).toContain('<span>Analyzer breaker on the candidate</span><b>open</b>');
    expect(sut).toContain('<td>100</td><td>24</td><td>50</td><td>20</td><td>5</td><td>1</td><td>7</td>');
    expect(sut).toContain('run-9');
    expect(sut).toContain('shadow-regression: toolArguments +1');
    // The windows table, newest first, names what was beyond the noise.
    expect(sut).toContain('toolArguments 100.0 % (noise 0.0 %); &lt;b&gt;orders&lt;/b&gt;: refusals 50.0 %');
  });

  it('draws every compared metric against its noise floor over the windows, marking those beyond', () => {
    const charts = [...sut.matchAll(/<figure class="chart-box" data-metric="(\w+)">([\s\S]*?)<\/figure>/g)];
    expect(charts.map((c) => c[1])).toEqual([
      'e2eMs',
      'ttftMs',
      'errorRate',
      'dissimilarity',
      'hallucinationRisk',
      'toolCalls',
      'toolArguments',
      'schemaViolations',
      'refusals',
    ]);
    const of = (metric: string) => charts.find((c) => c[1] === metric)![2];
    expect(of('toolArguments')).toContain('2/3 windows beyond the noise');
    expect(of('toolArguments').match(/<circle class="beyond"/g)).toHaveLength(2);
    expect(of('refusals')).toContain('1/3 windows beyond the noise');
    expect(of('e2eMs')).toContain('0/3 windows beyond the noise');
    expect(of('e2eMs')).toMatch(/<path class="noise" d="M[\d.]+,[\d.]+L[\d.]+,[\d.]+L[\d.]+,[\d.]+"/);
    expect(of('schemaViolations')).toContain('Not compared in any window');
  });

  it('escapes every text from the campaign', () => {
    expect(sut).not.toContain('<script>alert(1)</script>');
    expect(sut).toContain('candidate v2 &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(sut).not.toContain('<b>orders</b>');
  });

  it('says so for a campaign that is not live', () => {
    const batch = renderShadowReportHtml({
      ...campaign,
      status: 'completed',
      report: { ...campaign.report!, live: undefined },
    });
    expect([...batch.matchAll(/<section id="([\w-]+)"/g)].map((m) => m[1])).toEqual(['verdict', 'groups']);
    expect(batch).toContain('Not a live campaign');
  });
});
