import type { RunReportDocument } from './run-report.document';
import type { Distribution, RunSeries, SeriesTokenSample } from './run-series';
import { REPORT_CHART_SCRIPT } from './report-html.script';

/** The chart library's files, inlined into the page (see `loadReportAssets`). */
export interface ReportAssets {
  readonly uplotJs: string;
  readonly uplotCss: string;
}

/** Tier colours by rank (best first); the reserved breach tier is always red. */
const TIER_COLOURS = ['#2e7d32', '#f9a825', '#ef6c00', '#6a1b9a', '#1565c0'];
const BREACH_COLOUR = '#c62828';
/** Name of the tier a run falls into when no tier holds (analysis: tier policy). */
const BREACH_TIER = 'SLO-breach';
/** How the page names where a cause's threshold comes from (the contract's `source`). */
const THRESHOLD_SOURCES: Record<string, string> = {
  simulator: '<strong>derived on the simulator only</strong>',
  spec: 'the spec',
  campaign: 'a campaign setting',
  statistics: 'a significance level',
};

/** What the page's script draws: the series, columnar and relative to the run's start (s). */
interface ChartData {
  startMs: number;
  endMs: number;
  t: number[];
  windows: Record<string, (number | null)[]>;
  errorClasses: Record<string, number[]>;
  gpu: Record<string, [number[], number[]]>;
  distributions: Record<string, { unit: string; edges: number[]; counts: number[] }>;
  tiers: { from: number; to: number; tier: string; colour: string }[];
  breakers: { at: number; to: string; label: string }[];
}

/**
 * The run's report as one self-contained HTML page: the chart library (uPlot, MIT), its CSS and
 * the data are inlined and a Content-Security-Policy forbids every fetch, so the file opens
 * offline and can be attached to a ticket. Every text that came from a target, a campaign or a
 * detector is escaped. Pure: the same document and assets give the same page.
 */
export function renderReportHtml(doc: RunReportDocument, assets: ReportAssets): string {
  const s = doc.summary;
  const series = doc.series;
  const start = s.startedAt ?? series?.windows[0]?.at ?? 0;
  const end = Math.max(s.endedAt ?? start, series?.windows[series.windows.length - 1]?.at ?? start);
  const tierBands = tierSegments(doc, start, end);
  const chartData = series ? chartDataOf(doc, series, start, end, tierBands) : null;
  const title = `Fathom run ${doc.runId}${doc.campaign ? ` (${doc.campaign.name})` : ''}`;
  const sections = [
    verdictSection(doc, tierBands, start, end),
    series ? latencySection(series) : missingSeries('latency', 'Latency over time'),
    series ? throughputSection(doc, series) : missingSeries('throughput', 'Throughput, errors and goodput'),
    series ? distributionsSection(series) : missingSeries('distributions', 'Distributions'),
    series ? tokenSection(series) : missingSeries('tokens', 'Token confidence'),
    series ? gpuSection(doc, series, start, end) : missingSeries('gpu', 'GPU and server'),
    rootCauseSection(doc),
    semanticSection(doc, series),
    stepsSection(doc),
    specSection(doc),
  ];
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="fathom report (schema ${doc.schemaVersion})">
<title>${esc(title)}</title>
<style>${assets.uplotCss}</style>
<style>${REPORT_PAGE_CSS}</style>
</head>
<body>
<header><h1>${esc(title)}</h1><p class="muted">campaign ${esc(doc.campaignId)} &middot; ${esc(iso(start))} to ${esc(iso(end))} (${fmtSeconds((end - start) / 1000)})</p></header>
<main>
${sections.join('\n')}
</main>
<script type="application/json" id="fathom-data">${jsonForScript(chartData)}</script>
<script>${inlineScript(assets.uplotJs)}</script>
<script>${REPORT_CHART_SCRIPT}</script>
</body>
</html>
`;
}

function missingSeries(id: string, title: string): string {
  return `<section id="${id}"><h2>${esc(title)}</h2><p class="muted">This report was made before reports carried their time series.</p></section>`;
}

// ---------------------------------------------------------------------------------------- verdict

interface TierBand {
  from: number;
  to: number;
  tier: string;
  colour: string;
}

function tierColour(doc: RunReportDocument, tier: string): string {
  if (tier === BREACH_TIER) return BREACH_COLOUR;
  const rank = Object.keys(doc.objectives).indexOf(tier);
  return TIER_COLOURS[rank >= 0 ? rank % TIER_COLOURS.length : TIER_COLOURS.length - 1];
}

function tierSegments(doc: RunReportDocument, start: number, end: number): TierBand[] {
  const changes = doc.tiers.changes;
  const bands: TierBand[] = [];
  for (let i = 0; i < changes.length; i++) {
    const from = Math.max(start, changes[i].at);
    const to = Math.min(end, i + 1 < changes.length ? changes[i + 1].at : end);
    if (to > from) bands.push({ from, to, tier: changes[i].to, colour: tierColour(doc, changes[i].to) });
  }
  return bands;
}

function verdictSection(doc: RunReportDocument, bands: TierBand[], start: number, end: number): string {
  const s = doc.summary;
  const slo = s.slo.passed ? 'passed' : 'failed';
  const tier = doc.tiers.final ?? s.tier;
  const valid = doc.validity.valid;
  const q = s.latencyMs;
  const g = s.semantic.goodput;
  // Time per output token, in summaries that carry it (absent from older ones).
  const tpot = (q as Record<string, { p50: number | null; p99: number | null } | undefined>).tpot;
  const span = Math.max(1, end - start);
  const strip = bands.length
    ? `<div class="tier-strip" role="img" aria-label="tier timeline">${bands
        .map(
          (b) =>
            `<div style="width:${(((b.to - b.from) / span) * 100).toFixed(3)}%;background:${b.colour}" title="${esc(b.tier)}: ${esc(fmtSeconds((b.from - start) / 1000))} to ${esc(fmtSeconds((b.to - start) / 1000))}">${esc(b.tier)}</div>`,
        )
        .join('')}</div>`
    : '<p class="muted">No tier was assigned (no evaluation had enough data).</p>';
  const changes = doc.tiers.changes.length
    ? table(
        ['at', 'from', 'to', 'objective', 'reason'],
        doc.tiers.changes.map((c) => [
          fmtSeconds((c.at - start) / 1000),
          c.from ?? 'none',
          c.to,
          c.objective ?? '',
          c.reason,
        ]),
      )
    : '';
  const objectives = Object.entries(doc.objectives)
    .map(
      ([name, results]) =>
        `<h4 style="color:${tierColour(doc, name)}">${esc(name)}</h4>${table(
          ['objective', 'measured', 'threshold', 'verdict', 'detail'],
          results.map((r) => [
            r.objective,
            r.value === null ? 'no data' : fmtNumber(r.value),
            fmtNumber(r.threshold),
            r.ok ? 'holds' : 'MISSED',
            r.text,
          ]),
          (row) => (row[3] === 'MISSED' ? 'bad' : ''),
        )}`,
    )
    .join('');
  const reasons = doc.validity.reasons.length
    ? `<ul class="validity">${doc.validity.reasons
        .map(
          (r) =>
            `<li data-kind="${esc(r.kind)}"><b>${esc(r.kind)}</b>: ${esc(r.detail)}${figuresText(r.figures)}</li>`,
        )
        .join('')}</ul>`
    : '';
  return `<section id="verdict" data-slo="${slo}" data-tier="${esc(tier ?? '')}" data-valid="${valid}" data-status="${esc(s.status)}">
<h2>Verdict</h2>
<div class="cards">
  <div class="card ${s.slo.passed ? 'good' : 'bad'}"><span>Campaign SLO</span><b id="verdict-slo">${slo.toUpperCase()}</b></div>
  <div class="card" style="border-color:${tier ? tierColour(doc, tier) : '#999'}"><span>Final tier</span><b id="verdict-tier">${esc(tier ?? 'n/a')}</b></div>
  <div class="card ${valid ? 'good' : 'bad'}"><span>Measurement</span><b id="verdict-validity">${valid ? 'VALID' : 'INVALID'}</b></div>
  <div class="card"><span>Run</span><b>${esc(s.status)}</b></div>
</div>
${s.slo.failures.length ? `<ul class="failures">${s.slo.failures.map((f) => `<li>${esc(f)}</li>`).join('')}</ul>` : ''}
${s.reason ? `<p>${esc(s.reason)}</p>` : ''}
${reasons}
<table class="figures"><tbody>
<tr><th>requests</th><td>${s.requests}</td><th>errors</th><td>${s.errors} (${fmtPct(s.errorRate)})</td><th>dropped</th><td>${s.dropped}</td></tr>
<tr><th>throughput</th><td>${fmtNumber(s.throughput.requestsPerSec)} req/s</td><th>output tokens</th><td>${fmtNumber(s.throughput.outputTokensPerSec)} tok/s</td><th>goodput</th><td>${g ? `${fmtNumber(g.goodputPerSec)} req/s (semantic ${fmtNumber(g.semanticGoodputPerSec)})` : 'n/a'}</td></tr>
<tr><th>E2E P50 / P99</th><td>${fmtMs(q.e2e.p50)} / ${fmtMs(q.e2e.p99)}</td><th>corrected E2E P99</th><td>${fmtMs(q.correctedE2e.p99)}</td><th>TTFT P50 / P99</th><td>${fmtMs(q.ttft.p50)} / ${fmtMs(q.ttft.p99)}</td></tr>
<tr><th>ITL P50 / P99</th><td>${fmtMs(q.itl.p50)} / ${fmtMs(q.itl.p99)}</td><th>breaker trips</th><td>${doc.breakers.trips}</td><th>root causes</th><td>${doc.rootCauses.length}</td></tr>
${tpot ? `<tr><th>TPOT P50 / P99</th><td>${fmtMs(tpot.p50)} / ${fmtMs(tpot.p99)}</td><td colspan="4"></td></tr>` : ''}
${generatorRow(doc.validity.generator)}
</tbody></table>
<h3>Tier timeline</h3>
${strip}
${changes}
<h3>Tier objectives over the whole run</h3>
${objectives || '<p class="muted">No tiers.</p>'}
</section>`;
}

/** The load generator's own health (medians over its judged windows), as the CLI summary says it. */
function generatorRow(g: RunReportDocument['validity']['generator']): string {
  if (!g) return '';
  const pct = (v: number) => `${(v * 100).toFixed(0)} %`;
  const wait = g.coreWaitShareMedian === undefined ? 'not measured' : pct(g.coreWaitShareMedian);
  const onCore = g.coreRunShareMedian === undefined ? '' : ` (on its core ${pct(g.coreRunShareMedian)})`;
  return `<tr id="generator-health"><th>generator: engine busy (median of ${g.windows} windows)</th><td>${pct(g.loopUtilizationMedian)}${onCore}</td><th>engine waited for its core</th><td>${wait}</td><th>event-loop delay P99 (max)</th><td>${fmtMs(g.loopDelayP99MaxMs)}</td></tr>`;
}

// ----------------------------------------------------------------------------------------- charts

function chart(id: string, title: string, note = ''): string {
  return `<figure class="chart-box"><figcaption>${esc(title)}</figcaption><div class="chart" id="${id}" data-chart="${id}"></div>${note ? `<p class="muted">${esc(note)}</p>` : ''}</figure>`;
}

function latencySection(series: RunSeries): string {
  if (!series.windows.length)
    return `<section id="latency"><h2>Latency over time</h2><p class="muted">No telemetry window arrived.</p></section>`;
  return `<section id="latency"><h2>Latency over time</h2>
<p class="muted">Per ${fmtSeconds(series.bucketMs / 1000)} window, merged exactly over every generator. Background: the tier the run was in; vertical lines: breakers opening (red), half-open (orange), closing (green).</p>
<div class="grid2">${chart('chart-e2e', 'End to end and corrected E2E, P50 and P99 (ms)')}${chart('chart-ttft-itl', 'TTFT and inter-token latency, P50 and P99 (ms)')}</div>
</section>`;
}

function throughputSection(doc: RunReportDocument, series: RunSeries): string {
  if (!series.windows.length)
    return `<section id="throughput"><h2>Throughput, errors and goodput</h2><p class="muted">No telemetry window arrived.</p></section>`;
  const errors = Object.keys(doc.summary.errorClasses).length
    ? chart('chart-errors', 'Errors per second by class')
    : '<p class="muted">No request failed.</p>';
  return `<section id="throughput"><h2>Throughput, errors and goodput</h2>
<p class="muted">Goodput: requests that succeeded within the per-request latency SLO; semantic goodput: of those, the ones that also passed every semantic check (over the responses the semantic-monitor judged, scaled to the window's request rate).</p>
<div class="grid2">${chart('chart-throughput', 'Requests per second, goodput and semantic goodput')}${chart('chart-tokens', 'Output tokens per second')}</div>
${errors}
</section>`;
}

function distributionsSection(series: RunSeries): string {
  const d = series.distributions;
  const box = (id: string, title: string, dist: Distribution) =>
    dist.total > 0
      ? chart(id, `${title} (${dist.total} values)`)
      : `<p class="muted">${esc(title)}: no values.</p>`;
  return `<section id="distributions"><h2>Distributions</h2>
<p class="muted">Latencies: exact counts from the merged HDR histograms in log-spaced bins; output tokens: the sampled records.</p>
<div class="grid2">${box('chart-dist-ttft', 'TTFT (ms)', d.ttft)}${box('chart-dist-itl', 'Inter-token latency (ms)', d.itl)}${box('chart-dist-e2e', 'End to end (ms)', d.e2e)}${box('chart-dist-tokens', 'Output tokens per response', d.outputTokens)}</div>
</section>`;
}

/** Scrapes before the run's start or after its end describe no load of this run. */
function gpuInRun(series: RunSeries, start: number, end: number): RunSeries['gpu'] {
  return series.gpu
    .map((g) => ({ metric: g.metric, points: g.points.filter((p) => p[0] >= start && p[0] <= end) }))
    .filter((g) => g.points.length > 0);
}

function gpuSection(doc: RunReportDocument, series: RunSeries, start: number, end: number): string {
  const inRun = gpuInRun(series, start, end);
  const has = (...metrics: string[]) => inRun.some((g) => metrics.includes(g.metric));
  const charts = [
    has('sm_active_ratio', 'dram_active_ratio', 'gpu_util_pct', 'kv_cache_usage_ratio')
      ? chart('chart-gpu-activity', 'SM and DRAM activity, GPU busy and KV-cache use (0..1)')
      : '',
    has('requests_running', 'requests_waiting')
      ? chart('chart-gpu-requests', 'Requests running and waiting on the server')
      : '',
    has('fb_used_mib', 'fb_total_mib') ? chart('chart-gpu-memory', 'Framebuffer memory (MiB)') : '',
    has('power_w') ? chart('chart-gpu-power', 'Board power (W)') : '',
  ].filter(Boolean);
  const g = doc.gpu;
  return `<section id="gpu"><h2>GPU and server</h2>
<p class="muted">${doc.summary.gpu.scrapes} scrapes, ${doc.summary.gpu.gaps} gaps; KV-cache peak ${fmtNumber(g.kvUsagePeak)}, DRAM active peak ${fmtNumber(g.dramActivePeak)}, preemptions ${fmtNumber(g.preemptions)}, prefix-cache hit-rate variance ${fmtNumber(g.kvHitRateVariance)}${g.kvHitRateVarianceHealthy === false ? ' (unhealthy)' : ''}. Same time axis as the latency charts.</p>
${charts.length ? `<div class="grid2">${charts.join('')}</div>` : '<p class="muted">No GPU or server metrics were scraped (the campaign named no metricsUrls, or every scrape failed).</p>'}
${smHeatMap(doc)}
</section>`;
}

/** The SM-utilisation heat map (GPU x time bucket), white idle to dark blue saturated, grey a gap. */
function smHeatMap(doc: RunReportDocument): string {
  const map = doc.gpu.smHeatMap;
  if (!map.rows.length || !map.bucketStartsMs.length) return '';
  const start = doc.summary.startedAt ?? map.bucketStartsMs[0];
  const rows = map.rows
    .map(
      (row, r) =>
        `<div class="heat-row"><span class="heat-label">${esc(row)}</span>${map.cells[r]
          .map((v, c) => {
            const at = fmtSeconds((map.bucketStartsMs[c] - start) / 1000);
            if (v === null) return `<i class="gap" title="${esc(at)}: no reading"></i>`;
            const x = Math.max(0, Math.min(1, v));
            const colour = `rgb(${Math.round(255 - 230 * x)},${Math.round(255 - 180 * x)},${Math.round(255 - 100 * x)})`;
            return `<i style="background:${colour}" title="${esc(`${at}: ${(x * 100).toFixed(0)} %`)}"></i>`;
          })
          .join('')}</div>`,
    )
    .join('');
  return `<h3>SM utilisation per GPU</h3><p class="muted">One cell per ${esc(fmtSeconds(map.bucketMs / 1000))}; white idle, dark blue saturated, grey no reading.</p><div class="heat">${rows}</div>`;
}

// ------------------------------------------------------------------------------- token heat map

/** Entropy (bits) to a colour: white at 0, red at 5 bits and above (the spec's hallucinated mean is 4.8). */
function entropyColour(bits: number): string {
  const x = Math.max(0, Math.min(1, bits / 5));
  const g = Math.round(255 - 190 * x);
  const b = Math.round(255 - 215 * x);
  return `rgb(255,${g},${b})`;
}

function tokenSection(series: RunSeries): string {
  const samples = series.tokenSamples;
  if (!samples.length)
    return `<section id="tokens"><h2>Token confidence</h2><p class="muted">No response carried logprobs with alternatives (ask for them with scenario.logprobs and topLogprobs), so there is nothing to map.</p></section>`;
  return `<section id="tokens"><h2>Token confidence</h2>
<p class="muted">A bounded sample of the responses (those with hallucination-risk spans first): each token's background is its entropy (white 0 bits, red 5 bits or more); outlined tokens lie in a hallucination-risk span. Hover a token for its entropy and margin.</p>
<div class="legend">${[0, 1, 2, 3, 4, 5].map((b) => `<span style="background:${entropyColour(b)}">${b} bits</span>`).join('')}<span class="risk">risk span</span></div>
${samples.map(tokenSample).join('\n')}
</section>`;
}

function tokenSample(sample: SeriesTokenSample): string {
  const inSpan = (i: number) => sample.spans.some((s) => i >= s.start && i < s.end);
  const tokens = sample.rows
    .map((r, i) => {
      const title = `#${i} entropy ${r.entropyBits.toFixed(2)} bits, margin ${r.margin === null ? 'n/a' : r.margin.toFixed(3)}, ${r.risk}`;
      return `<span class="tok${inSpan(i) ? ' risk' : ''}" style="background:${entropyColour(r.entropyBits)}" title="${esc(title)}">${esc(r.token)}</span>`;
    })
    .join('');
  const spans = sample.spans.map((s) => `[${s.start}, ${s.end})`).join(' ');
  return `<div class="token-sample" data-spans="${sample.spans.length}"><p class="muted">request ${esc(sample.requestId)} &middot; mean entropy ${sample.meanEntropyBits === null ? 'n/a' : `${sample.meanEntropyBits.toFixed(2)} bits`} &middot; ${sample.spans.length ? `risk spans ${esc(spans)}` : 'no risk span'}${sample.truncated ? ' &middot; first tokens only' : ''}</p><div class="tokens">${tokens}</div></div>`;
}

// ---------------------------------------------------------------------------- causes, semantics

/** The thresholds that made a cause fire; one derived on the simulator only is marked so. */
function thresholdsText(thresholds: RunReportDocument['rootCauses'][number]['thresholds']): string {
  if (!thresholds?.length) return '';
  const items = thresholds.map(
    (t) => `<li>${esc(t.name)} ${esc(String(t.value))}: ${THRESHOLD_SOURCES[t.source]} (${esc(t.note)})</li>`,
  );
  return `<h4>Thresholds</h4><ul class="thresholds">${items.join('')}</ul>`;
}

function rootCauseSection(doc: RunReportDocument): string {
  if (!doc.rootCauses.length)
    return `<section id="root-causes"><h2>Root causes</h2><p class="muted">None named: no detector found a cause worth naming.</p></section>`;
  const start = doc.summary.startedAt ?? 0;
  const items = doc.rootCauses
    .map(
      (
        c,
        i,
      ) => `<li class="cause"><h3>${i + 1}. ${esc(c.title)} <small>${esc(c.kind)} &middot; confidence ${(c.confidence * 100).toFixed(0)} % &middot; ${esc(fmtSeconds((c.since - start) / 1000))} to ${esc(fmtSeconds((c.until - start) / 1000))}</small></h3>
<h4>Evidence</h4><ul>${c.evidence.map((e) => `<li>${esc(e)}</li>`).join('')}</ul>
${Object.keys(c.figures).length ? `<p class="muted">${figuresText(c.figures)}</p>` : ''}
${thresholdsText(c.thresholds)}
<h4>Advice</h4><ul>${c.advice.map((a) => `<li>${esc(a)}</li>`).join('')}</ul></li>`,
    )
    .join('');
  return `<section id="root-causes"><h2>Root causes</h2><ol class="causes">${items}</ol></section>`;
}

const FINDING_TITLES: Record<string, string> = {
  'baseline-drift': 'Drift against the baseline',
  'intent-accuracy': 'Intent accuracy',
  'schema-drift': 'Tool schema drift',
  'rag-mismatch': 'RAG query/document mismatch',
  'prompt-explosion': 'Prompt explosion',
  'hallucination-risk': 'Hallucination risk',
  'semantic-goodput': 'Semantic goodput',
  'semantic-monitor-fault': 'Semantic monitor faults',
  'tool-contract-unusable': 'Unusable tool contracts',
  'semantic-anomaly': 'Semantic anomalies (LLM monitor)',
};
/** The spec's semantic findings, always listed (absent ones say so). */
const KEY_FINDINGS = [
  'baseline-drift',
  'intent-accuracy',
  'schema-drift',
  'rag-mismatch',
  'prompt-explosion',
];

function semanticSection(doc: RunReportDocument, series: RunSeries | undefined): string {
  const sem = doc.semantic;
  const findings = series?.semanticFindings ?? [];
  const byName = new Map(findings.map((f) => [f.detector, f]));
  const names = [
    ...KEY_FINDINGS,
    ...findings.map((f) => f.detector).filter((d) => !KEY_FINDINGS.includes(d)),
  ];
  const blocks = names.map((name) => {
    const f = byName.get(name);
    const title = FINDING_TITLES[name] ?? name;
    if (!f)
      return `<div class="finding none"><h3>${esc(title)}</h3><p class="muted">No ${esc(name)} signal in this run.</p></div>`;
    const severities = Object.entries(f.bySeverity)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
    return `<div class="finding" data-detector="${esc(name)}"><h3>${esc(title)} <small>${f.count} signals (${esc(severities)})</small></h3><ul>${f.examples
      .map(
        (e) =>
          `<li class="sev-${esc(e.severity)}">${esc(e.message)}${
            e.labels
              ? ` <span class="muted">${esc(
                  Object.entries(e.labels)
                    .map(([k, v]) => `${k}=${v}`)
                    .join(' '),
                )}</span>`
              : ''
          }${figuresText(e.figures)}</li>`,
      )
      .join('')}</ul></div>`;
  });
  const tools = sem.toolContracts.rates.length
    ? `<h3>Tool contracts</h3>${table(
        ['tool', 'version', 'calls', 'checked', 'contract pass rate', 'fallback rate', 'source'],
        sem.toolContracts.rates.map((r) => [
          r.tool,
          r.version,
          String(r.calls),
          String(r.checked),
          r.contractPassRate === null ? 'n/a' : fmtPct(r.contractPassRate),
          r.fallbackTriggerRate === null ? 'n/a' : fmtPct(r.fallbackTriggerRate),
          r.source,
        ]),
      )}${sem.toolContracts.drift.length ? `<ul>${sem.toolContracts.drift.map((d) => `<li>${esc(d.text)}</li>`).join('')}</ul>` : ''}`
    : '';
  return `<section id="semantic"><h2>Semantic findings</h2>
<p>${sem.judgedResponses} responses judged for hallucination risk, ${sem.riskyResponses} with risk spans; ${sem.stalledResponses} stalled streams; ${sem.tokenCountMismatches} client/server token-count mismatches.</p>
${blocks.join('\n')}
${tools}
</section>`;
}

/**
 * Assertion coverage (which named assertions ran, passed, failed, never ran) and, for steps
 * scenarios, each step's runs, SLA misses against its own budget and latency. No semantic
 * deviation per step: nothing measures one (the semantic-monitor judges whole responses).
 */
function stepsSection(doc: RunReportDocument): string {
  const c = doc.summary.assertions;
  const steps = doc.summary.steps;
  if (!c && !steps) return '';
  const coverage = c
    ? `<h3>Assertion coverage</h3><p>${esc(assertionCoverageText(c))}</p>${table(
        ['assertion', 'declared', 'state', 'passed', 'failed'],
        c.byName.map((a) => [
          a.name,
          a.declared ? 'yes' : 'driver',
          a.state,
          String(a.passes),
          String(a.failures),
        ]),
        (row) => (row[2] === 'failed' ? 'bad' : ''),
      )}`
    : '';
  const rows = steps
    ? `<h3>Steps</h3>${table(
        [
          'step',
          'kind',
          'runs',
          'failed',
          'skipped',
          'budget',
          'SLA misses',
          'mean',
          'max',
          'first message',
          'messages',
          'concurrency',
        ],
        steps.map((st) => [
          st.name,
          st.kind,
          String(st.runs),
          String(st.failed),
          String(st.skipped),
          st.budgetMs === null ? '-' : fmtMs(st.budgetMs),
          st.budgetMs === null ? '-' : String(st.slaMisses),
          fmtMs(st.latencyMeanMs),
          fmtMs(st.latencyMaxMs),
          fmtMs(st.firstMessageMeanMs),
          String(st.messages),
          st.concurrency === null ? '-' : String(st.concurrency),
        ]),
        (row) => (row[6] !== '-' && row[6] !== '0' ? 'bad' : ''),
      )}`
    : '';
  return `<section id="steps"><h2>Steps and assertions</h2>${coverage}${rows}</section>`;
}

/** `5/6 declared assertions ran (83 %): 4 passed, 1 failed, 1 never ran` (+ driver assertions). */
export function assertionCoverageText(c: NonNullable<RunReportDocument['summary']['assertions']>): string {
  const declaredRan = c.byName.filter((a) => a.declared && a.state !== 'never-ran').length;
  const others = c.byName.length - c.declared;
  const head = c.declared
    ? `${declaredRan}/${c.declared} declared assertions ran (${Math.round((declaredRan / c.declared) * 100)} %)`
    : 'no declared assertions';
  return `${head}: ${c.passed} passed, ${c.failed} failed, ${c.neverRan} never ran${others ? ` (${others} of the driver's own included)` : ''}`;
}

function specSection(doc: RunReportDocument): string {
  if (!doc.campaign)
    return `<section id="spec"><h2>Campaign</h2><p class="muted">The campaign spec was not stored with this run.</p></section>`;
  return `<section id="spec"><h2>Campaign</h2><p class="muted">As it ran; credentials and header values are redacted.</p><pre>${esc(JSON.stringify(inSpecOrder(doc.campaign.spec), null, 2))}</pre></section>`;
}

/** The spec's top-level fields in the order a campaign file writes them (jsonb storage sorts keys). */
const SPEC_ORDER = ['name', 'target', 'scenario', 'load', 'slo', 'semantic', 'reruns'];

function inSpecOrder(spec: unknown): unknown {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return spec;
  const fields = spec as Record<string, unknown>;
  const keys = [
    ...SPEC_ORDER.filter((k) => k in fields),
    ...Object.keys(fields).filter((k) => !SPEC_ORDER.includes(k)),
  ];
  return Object.fromEntries(keys.map((k) => [k, fields[k]]));
}

// ------------------------------------------------------------------------------------------- data

function chartDataOf(
  doc: RunReportDocument,
  series: RunSeries,
  start: number,
  end: number,
  bands: TierBand[],
): ChartData {
  const w = series.windows;
  const rel = (at: number) => Math.round(at - start) / 1000;
  const col = (f: (x: (typeof w)[number]) => number | null) => w.map(f);
  const errorClasses: Record<string, number[]> = {};
  for (const name of Object.keys(doc.summary.errorClasses))
    errorClasses[name] = w.map((x) => (x.errorClasses[name] ?? 0) / x.seconds);
  const gpu: ChartData['gpu'] = {};
  for (const g of gpuInRun(series, start, end))
    gpu[g.metric] = [g.points.map((p) => rel(p[0])), g.points.map((p) => p[1])];
  const distributions: ChartData['distributions'] = {};
  for (const [name, d] of Object.entries(series.distributions))
    distributions[name] = { unit: d.unit, edges: d.edges, counts: d.counts };
  return {
    startMs: start,
    endMs: end,
    t: w.map((x) => rel(x.at)),
    windows: {
      e2eP50: col((x) => x.latencyMs.e2e.p50),
      e2eP99: col((x) => x.latencyMs.e2e.p99),
      correctedE2eP50: col((x) => x.latencyMs.correctedE2e.p50),
      correctedE2eP99: col((x) => x.latencyMs.correctedE2e.p99),
      ttftP50: col((x) => x.latencyMs.ttft.p50),
      ttftP99: col((x) => x.latencyMs.ttft.p99),
      itlP50: col((x) => x.latencyMs.itl.p50),
      itlP99: col((x) => x.latencyMs.itl.p99),
      requestsPerSec: col((x) => x.requestsPerSec),
      goodputPerSec: col((x) => x.goodputPerSec),
      semanticGoodputPerSec: col((x) => x.semanticGoodputPerSec),
      outputTokensPerSec: col((x) => x.outputTokensPerSec),
    },
    errorClasses,
    gpu,
    distributions,
    tiers: bands.map((b) => ({ from: rel(b.from), to: rel(b.to), tier: b.tier, colour: b.colour })),
    breakers: doc.breakers.changes.map((b) => ({
      at: rel(b.at),
      to: b.to,
      label: `${b.layer} ${b.node}: ${b.from} -> ${b.to}`,
    })),
  };
}

/** JSON inside a script element: `<` escaped so no text can close the element. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** A script's text with anything that could end the element neutralised, and no source-map fetch. */
function inlineScript(js: string): string {
  return js.replace(/<\/(script)/gi, '<\\/$1').replace(/\n\/\/# sourceMappingURL=.*$/m, '');
}

// ----------------------------------------------------------------------------------------- format

function esc(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

function table(head: string[], rows: string[][], rowClass: (row: string[]) => string = () => ''): string {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr class="${rowClass(r)}">${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

function figuresText(figures: Record<string, number>): string {
  const entries = Object.entries(figures);
  if (!entries.length) return '';
  return ` <span class="figs">${esc(entries.map(([k, v]) => `${k} ${fmtNumber(v)}`).join(', '))}</span>`;
}

function fmtNumber(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return 'n/a';
  if (Number.isInteger(v)) return String(v);
  const abs = Math.abs(v);
  // Four significant digits below 1: an availability of 0.9995 must not read 1.00.
  return abs >= 100 ? v.toFixed(0) : abs >= 1 ? v.toFixed(2) : String(Number(v.toPrecision(4)));
}

function fmtMs(v: number | null): string {
  if (v === null) return 'n/a';
  // Three decimals below 1 ms, as the CLI summary prints them.
  return v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v < 1 ? 3 : 1)} ms`;
}

function fmtPct(v: number): string {
  return `${(v * 100).toFixed(2)} %`;
}

function fmtSeconds(s: number): string {
  return s >= 120 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`;
}

function iso(ms: number): string {
  return Number.isFinite(ms) && ms > 0 ? new Date(ms).toISOString() : 'n/a';
}

export const REPORT_PAGE_CSS = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
header{padding:16px 24px;background:#263238;color:#fff}header h1{margin:0;font-size:20px}header .muted{color:#cfd8dc}
main{padding:8px 24px 40px;max-width:1400px;margin:0 auto}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:12px 18px;margin:16px 0}
h2{margin:4px 0 10px;font-size:18px}h3{font-size:15px;margin:14px 0 6px}h4{margin:8px 0 4px;font-size:13px}
.muted{color:#666;font-size:12.5px}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin-bottom:10px}
.card{border:2px solid #bbb;border-radius:6px;padding:8px 14px;min-width:150px}
.card span{display:block;font-size:12px;color:#555}.card b{font-size:20px}
.card.good{border-color:#2e7d32}.card.good b{color:#2e7d32}.card.bad{border-color:#c62828}.card.bad b{color:#c62828}
ul.failures li,ul.validity li{color:#b71c1c}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border:1px solid #e0e0e0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5}tr.bad td{background:#ffebee}
table.figures th{width:12%}
.tier-strip{display:flex;height:26px;border-radius:4px;overflow:hidden;margin:6px 0}
.tier-strip div{color:#fff;font-size:12px;line-height:26px;text-align:center;overflow:hidden;white-space:nowrap}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:12px}
.chart-box{margin:0}.chart-box figcaption{font-weight:600;font-size:13px;margin:4px 0}
.chart{min-height:260px}
.legend span{display:inline-block;padding:1px 6px;margin-right:4px;border:1px solid #ddd;font-size:12px}
.legend .risk,.tok.risk{outline:2px solid #6a1b9a;outline-offset:-1px}
.token-sample{margin:10px 0;border-top:1px solid #eee}
.tokens{font:13px/1.9 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word}
.tok{padding:1px 0}
.finding h3 small,.cause small{font-weight:normal;color:#666}
.finding.none h3{color:#777}
li.sev-critical{color:#b71c1c}li.sev-warning{color:#8d6e00}
.figs{color:#555;font-size:12px}
.heat-row{display:flex;align-items:center;gap:1px;margin:1px 0}.heat-label{width:180px;font-size:12px;overflow:hidden;white-space:nowrap}
.heat{border:1px solid #ccc;display:inline-block;width:100%}.heat-row i{flex:1;height:16px;min-width:2px;border-left:1px solid #eee}.heat-row i.gap{background:#ddd}
ol.causes{padding-left:18px}li.cause{margin-bottom:12px}
pre{background:#f5f5f5;padding:10px;overflow:auto;font-size:12px;max-height:480px}
`;
