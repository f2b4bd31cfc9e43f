import type {
  ShadowGroupReport,
  ShadowLiveStatus,
  ShadowMetric,
  ShadowWindowReport,
} from '@fathom/contracts';
import { REPORT_PAGE_CSS } from './report-html.render';

/** A shadow campaign as stored, with what the page shows of its configuration. */
export interface ShadowReportInput {
  readonly id: string;
  readonly name: string;
  readonly status: string;
  readonly reason: string | null;
  readonly createdAt: number;
  readonly endedAt: number | null;
  /** Base URLs of the three targets (their keys are never part of this). */
  readonly targets: { readonly primary: string; readonly secondary: string; readonly candidate: string };
  readonly report: {
    readonly samples: number;
    readonly similarity: string;
    readonly groups: readonly ShadowGroupReport[];
    readonly live?: ShadowLiveStatus;
  } | null;
}

/** Every metric the windows compare, in the page's order, with how its figures read. */
const METRICS: ReadonlyArray<{ metric: ShadowMetric; title: string; unit: 'ms' | 'share' | 'rate' }> = [
  { metric: 'e2eMs', title: 'End-to-end latency, candidate - primary', unit: 'ms' },
  { metric: 'ttftMs', title: 'Time to first token, candidate - primary', unit: 'ms' },
  { metric: 'errorRate', title: 'Error rate, candidate - primary', unit: 'rate' },
  { metric: 'dissimilarity', title: 'Semantic dissimilarity to the primary (1 - cosine)', unit: 'share' },
  {
    metric: 'hallucinationRisk',
    title: 'Hallucination risk (share of risky tokens), candidate - primary',
    unit: 'share',
  },
  { metric: 'toolCalls', title: 'Tool calls whose names or count differ from the primary', unit: 'rate' },
  { metric: 'toolArguments', title: 'Tool-call arguments not JSON-equal to the primary', unit: 'rate' },
  { metric: 'schemaViolations', title: 'Schema violations, candidate - primary', unit: 'rate' },
  { metric: 'refusals', title: 'Refusals, candidate - primary', unit: 'rate' },
];

/**
 * A shadow campaign's report as one self-contained HTML page: the verdict (tier, the analyzer's
 * breaker on the candidate, what was shed), one chart per metric of the candidate's difference
 * from the primary against the primary/secondary noise floor over the rolling windows (inline
 * SVG: no script, and a Content-Security-Policy that forbids every fetch), the windows, hours
 * and groups as tables. Every text from a campaign or a target is escaped. Pure.
 */
export function renderShadowReportHtml(campaign: ShadowReportInput): string {
  const live = campaign.report?.live;
  const windows = (live?.windows ?? []).filter((w) => w.samples > 0);
  const title = `Fathom shadow campaign ${campaign.name}`;
  const sections = [
    verdictSection(campaign, live),
    live ? chartsSection(windows) : '',
    live ? windowsSection('windows', 'Windows', windows) : '',
    live
      ? windowsSection(
          'hours',
          'Hours',
          live.hours.filter((w) => w.samples > 0),
        )
      : '',
    live ? breakerSection(live) : '',
    groupsSection(campaign),
  ];
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="fathom shadow report">
<title>${esc(title)}</title>
<style>${REPORT_PAGE_CSS}${SHADOW_CSS}</style>
</head>
<body>
<header><h1>${esc(title)}</h1><p class="muted">shadow campaign ${esc(campaign.id)} &middot; ${esc(iso(campaign.createdAt))} to ${campaign.endedAt ? esc(iso(campaign.endedAt)) : 'now (running)'}</p></header>
<main>
${sections.filter(Boolean).join('\n')}
</main>
</body>
</html>
`;
}

function verdictSection(campaign: ShadowReportInput, live: ShadowLiveStatus | undefined): string {
  const t = campaign.targets;
  const cards = [
    card(
      'Status',
      campaign.status + (campaign.reason ? ` (${campaign.reason})` : ''),
      campaign.status === 'failed' ? 'bad' : '',
    ),
    card('Samples', String(campaign.report?.samples ?? 0), ''),
  ];
  if (live) {
    cards.push(
      card('Tier', live.tier, live.tier === 'regressed' ? 'bad' : 'good'),
      card(
        'Analyzer breaker on the candidate',
        live.analyzerBreaker?.state ?? 'n/a',
        live.analyzerBreaker?.state === 'open'
          ? 'bad'
          : live.analyzerBreaker?.state === 'closed'
            ? 'good'
            : '',
      ),
      card(
        'Candidate shed breaker',
        live.candidateBreaker,
        live.candidateBreaker === 'closed' ? 'good' : 'bad',
      ),
    );
  }
  const shed = live
    ? `<h3>Traffic</h3>${table(
        [
          'offered',
          'replayed',
          'shed: sampled out',
          'shed: rate cap',
          'shed: concurrency cap',
          'shed: candidate breaker',
          'shed: analyzer breaker',
        ],
        [
          [
            live.offered,
            live.replayed,
            live.shed.sampled,
            live.shed.rate,
            live.shed.concurrency,
            live.shed.breaker,
            live.shed.analyzerBreaker ?? 'n/a',
          ].map(String),
        ],
      )}${
        live.linkedRuns.length
          ? `<p>Linked campaign runs started by a regression: ${live.linkedRuns.map(esc).join(', ')}</p>`
          : ''
      }`
    : '<p class="muted">Not a live campaign: no windows, tier or breaker; the report is its final comparison.</p>';
  return `<section id="verdict"><h2>Verdict</h2><div class="cards">${cards.join('')}</div>
<p class="muted">primary ${esc(t.primary)} &middot; secondary ${esc(t.secondary)} &middot; candidate ${esc(t.candidate)} &middot; similarity ${esc(campaign.report?.similarity ?? 'n/a')}</p>
${shed}</section>`;
}

function card(label: string, value: string, cls: string): string {
  return `<div class="card ${cls}"><span>${esc(label)}</span><b>${esc(value)}</b></div>`;
}

/** Per window, a metric's largest candidate difference and noise floor over the groups, and whether it was beyond. */
function pointsOf(windows: readonly ShadowWindowReport[], metric: ShadowMetric) {
  return windows.map((w) => {
    const ms = w.groups.flatMap((g) => g.metrics.filter((m) => m.metric === metric && m.samples > 0));
    if (ms.length === 0) return null;
    return {
      at: w.endedAt,
      difference: Math.max(...ms.map((m) => m.candidateDifference)),
      noise: Math.max(...ms.map((m) => m.noiseFloor)),
      beyond: ms.some((m) => m.beyondNoise),
    };
  });
}

function chartsSection(windows: readonly ShadowWindowReport[]): string {
  if (windows.length === 0)
    return `<section id="charts"><h2>Candidate against the noise floor</h2><p class="muted">No window with samples yet.</p></section>`;
  const charts = METRICS.map(({ metric, title, unit }) => {
    const points = pointsOf(windows, metric);
    const judged = points.filter((p) => p !== null);
    if (judged.length === 0)
      return `<figure class="chart-box" data-metric="${metric}"><figcaption>${esc(title)}</figcaption><p class="muted">Not compared in any window (nothing to compare: no tool calls, no declared schema, no embeddings, or too few samples).</p></figure>`;
    const beyond = judged.filter((p) => p.beyond).length;
    return `<figure class="chart-box" data-metric="${metric}"><figcaption>${esc(title)} <small>${beyond}/${judged.length} windows beyond the noise</small></figcaption>${svgChart(points, unit)}</figure>`;
  });
  return `<section id="charts"><h2>Candidate against the noise floor, per window</h2>
<p class="legend"><span class="cand">candidate - primary</span><span class="noise">noise floor (secondary - primary)</span><span class="beyond">beyond the noise</span></p>
<div class="grid2">${charts.join('')}</div></section>`;
}

const W = 560;
const H = 180;
const PAD = { left: 56, right: 10, top: 10, bottom: 24 };

function svgChart(
  points: ReadonlyArray<{ at: number; difference: number; noise: number; beyond: boolean } | null>,
  unit: 'ms' | 'share' | 'rate',
): string {
  const values = points.flatMap((p) => (p ? [p.difference, p.noise] : []));
  let lo = Math.min(0, ...values);
  let hi = Math.max(0, ...values);
  if (hi - lo < 1e-9) hi = lo + (unit === 'ms' ? 1 : 0.01);
  const pad = (hi - lo) * 0.05;
  lo -= pad;
  hi += pad;
  const n = points.length;
  const x = (i: number) =>
    PAD.left + (n === 1 ? (W - PAD.left - PAD.right) / 2 : (i / (n - 1)) * (W - PAD.left - PAD.right));
  const y = (v: number) => PAD.top + (1 - (v - lo) / (hi - lo)) * (H - PAD.top - PAD.bottom);
  const path = (pick: (p: { difference: number; noise: number }) => number) => {
    let d = '';
    let pen = false;
    points.forEach((p, i) => {
      if (!p) return void (pen = false);
      d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(pick(p)).toFixed(1)}`;
      pen = true;
    });
    return d;
  };
  const dots = points
    .map((p, i) =>
      p
        ? `<circle class="${p.beyond ? 'beyond' : 'cand'}" cx="${x(i).toFixed(1)}" cy="${y(p.difference).toFixed(1)}" r="${p.beyond ? 4 : 2.5}"><title>${esc(`${iso(p.at)}: candidate ${fmt(p.difference, unit)}, noise ${fmt(p.noise, unit)}${p.beyond ? ' (beyond)' : ''}`)}</title></circle>`
        : '',
    )
    .join('');
  const first = points.find((p) => p)?.at ?? 0;
  const last = [...points].reverse().find((p) => p)?.at ?? 0;
  return `<svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="candidate difference and noise floor over ${n} windows">
<line class="axis" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(0).toFixed(1)}" y2="${y(0).toFixed(1)}"/>
<text x="${PAD.left - 4}" y="${(PAD.top + 10).toFixed(1)}" text-anchor="end">${esc(fmt(hi, unit))}</text>
<text x="${PAD.left - 4}" y="${(H - PAD.bottom).toFixed(1)}" text-anchor="end">${esc(fmt(lo, unit))}</text>
<text x="${PAD.left}" y="${H - 6}">${esc(clock(first))}</text>
<text x="${W - PAD.right}" y="${H - 6}" text-anchor="end">${esc(clock(last))}</text>
<path class="noise" d="${path((p) => p.noise)}"/>
<path class="cand" d="${path((p) => p.difference)}"/>
${dots}
</svg>`;
}

function windowsSection(id: string, title: string, windows: readonly ShadowWindowReport[]): string {
  if (windows.length === 0)
    return `<section id="${id}"><h2>${esc(title)}</h2><p class="muted">None yet.</p></section>`;
  const rows = [...windows].reverse().map((w) => {
    const beyond = w.groups.flatMap((g) =>
      g.differences.map(
        (d) =>
          `${g.intent}: ${d.metric} ${fmt(d.candidateDifference, unitOf(d.metric))} (noise ${fmt(d.noiseFloor, unitOf(d.metric))})`,
      ),
    );
    return [
      iso(w.startedAt),
      fmtSeconds((w.endedAt - w.startedAt) / 1000),
      String(w.samples),
      w.regressed ? 'regressed' : 'ok',
      beyond.join('; ') || '-',
    ];
  });
  return `<section id="${id}"><h2>${esc(title)} <small class="muted">newest first</small></h2>${table(
    ['started', 'length', 'samples', 'verdict', 'beyond the noise floor'],
    rows,
    (r) => (r[3] === 'regressed' ? 'bad' : ''),
  )}</section>`;
}

function breakerSection(live: ShadowLiveStatus): string {
  const changes = live.analyzerBreaker?.changes ?? [];
  return `<section id="breaker"><h2>The analyzer's breaker on the candidate</h2>${
    changes.length
      ? table(
          ['at', 'from', 'to', 'why'],
          changes.map((c) => [iso(c.at), c.from, c.to, c.reason]),
          (r) => (r[2] === 'open' ? 'bad' : ''),
        )
      : '<p class="muted">Never opened.</p>'
  }</section>`;
}

function groupsSection(campaign: ShadowReportInput): string {
  const groups = campaign.report?.groups ?? [];
  if (groups.length === 0)
    return `<section id="groups"><h2>Per endpoint and intent</h2><p class="muted">No comparison yet.</p></section>`;
  const rows = groups.flatMap((g) =>
    g.metrics.map((m) => [
      g.endpoint,
      g.intent,
      m.metric,
      String(m.samples),
      fmt(m.candidateDifference, unitOf(m.metric)),
      fmt(m.noiseFloor, unitOf(m.metric)),
      m.beyondNoise ? 'beyond' : 'within',
    ]),
  );
  const scope =
    campaign.report?.live && campaign.status === 'running' ? 'latest window' : 'all stored samples';
  return `<section id="groups"><h2>Per endpoint and intent <small class="muted">${esc(scope)}</small></h2>${table(
    ['endpoint', 'intent', 'metric', 'samples', 'candidate', 'noise floor', 'verdict'],
    rows,
    (r) => (r[6] === 'beyond' ? 'bad' : ''),
  )}</section>`;
}

function unitOf(metric: ShadowMetric): 'ms' | 'share' | 'rate' {
  return METRICS.find((m) => m.metric === metric)?.unit ?? 'share';
}

function fmt(v: number, unit: 'ms' | 'share' | 'rate'): string {
  if (!Number.isFinite(v)) return 'n/a';
  if (unit === 'ms') return `${v.toFixed(1)} ms`;
  if (unit === 'rate') return `${(v * 100).toFixed(1)} %`;
  return v.toFixed(3);
}

function table(head: string[], rows: string[][], rowClass: (row: string[]) => string = () => ''): string {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr class="${rowClass(r)}">${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

function esc(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

function iso(ms: number): string {
  return Number.isFinite(ms) && ms > 0 ? new Date(ms).toISOString() : 'n/a';
}

function clock(ms: number): string {
  return Number.isFinite(ms) && ms > 0 ? new Date(ms).toISOString().slice(11, 19) : '';
}

function fmtSeconds(s: number): string {
  return s >= 120 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`;
}

const SHADOW_CSS = `
svg text{font-size:11px;fill:#555}svg .axis{stroke:#bbb}
svg path{fill:none;stroke-width:1.6}svg path.cand{stroke:#1565c0}svg path.noise{stroke:#777;stroke-dasharray:4 3}
svg circle.cand{fill:#1565c0}svg circle.beyond{fill:#c62828}
.legend .cand{border-color:#1565c0;color:#1565c0}.legend .noise{border-style:dashed;color:#555}.legend .beyond{border-color:#c62828;color:#c62828}
.chart-box small{font-weight:normal;color:#666}
`;
