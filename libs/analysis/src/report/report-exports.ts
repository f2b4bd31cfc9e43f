import { effectiveSlo, type CampaignSpec, type SloThresholds } from '@fathom/contracts';
import { sloObjectiveResults, type SloObjectiveResult } from '../slo/slo-verdict';
import type { RunReportDocument } from './run-report.document';
import { throughputFigures } from './run-summary.builder';

type Cell = string | number | boolean | null | undefined;

/** RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled; null is empty. */
function csvCell(value: Cell): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csv(header: string[], rows: Cell[][]): string {
  return [header, ...rows].map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
}

const LATENCIES = ['e2e', 'correctedE2e', 'ttft', 'itl'] as const;
const QUANTILES = ['p50', 'p95', 'p99', 'max'] as const;
const SNAKE: Record<(typeof LATENCIES)[number], string> = {
  e2e: 'e2e',
  correctedE2e: 'corrected_e2e',
  ttft: 'ttft',
  itl: 'itl',
};

/**
 * One row per window of the report's series (every generator merged): counts, rates, every
 * latency quantile, judged/good counts and goodput, the tier the run was in at the window's end,
 * the breakers open then, and one `errors_<class>` column per error class of the run.
 */
export function windowsCsv(doc: RunReportDocument): string {
  const windows = doc.series?.windows ?? [];
  const classes = Object.keys(doc.summary.errorClasses).sort();
  const header = [
    'window_end',
    'window_end_ms',
    'seconds',
    'requests',
    'errors',
    'error_rate',
    'dropped',
    'late',
    'input_tokens',
    'output_tokens',
    'requests_per_s',
    'output_tokens_per_s',
    ...LATENCIES.flatMap((l) => QUANTILES.map((q) => `${SNAKE[l]}_${q}_ms`)),
    'judged',
    'good',
    'semantically_good',
    'goodput_per_s',
    'semantic_goodput_per_s',
    'tier',
    'open_breakers',
    ...classes.map((c) => `errors_${c}`),
  ];
  const rows = windows.map((w) => [
    new Date(w.at).toISOString(),
    w.at,
    w.seconds,
    w.requests,
    w.errors,
    w.requests ? w.errors / w.requests : null,
    w.dropped,
    w.late,
    w.inputTokens,
    w.outputTokens,
    w.requestsPerSec,
    w.outputTokensPerSec,
    ...LATENCIES.flatMap((l) => QUANTILES.map((q) => w.latencyMs[l][q])),
    w.judged,
    w.good,
    w.semanticallyGood,
    w.goodputPerSec,
    w.semanticGoodputPerSec,
    tierAt(doc, w.at),
    openBreakersAt(doc, w.at),
    ...classes.map((c) => w.errorClasses[c] ?? 0),
  ]);
  return csv(header, rows);
}

/** The sampled per-request records the report kept (`series.records`), one row each. */
export function recordsCsv(doc: RunReportDocument): string {
  const header = [
    'request_id',
    'started_at_ms',
    'ended_at_ms',
    'late_ms',
    'status',
    'ok',
    'error_class',
    'e2e_ms',
    'corrected_e2e_ms',
    'ttft_ms',
    'gap_max_ms',
    'gap_median_ms',
    'input_tokens',
    'output_tokens',
    'risk_segments',
    'max_window_entropy_bits',
  ];
  const rows = (doc.series?.records ?? []).map((r) => [
    r.requestId,
    r.startedAt,
    r.endedAt,
    r.lateMs,
    r.status,
    r.ok,
    r.errorClass,
    r.e2eMs,
    r.correctedE2eMs,
    r.ttftMs,
    r.gapMaxMs,
    r.gapMedianMs,
    r.inputTokens,
    r.outputTokens,
    r.riskSegments,
    r.maxWindowEntropyBits,
  ]);
  return csv(header, rows);
}

function tierAt(doc: RunReportDocument, at: number): string | null {
  let tier: string | null = null;
  for (const c of doc.tiers.changes) if (c.at <= at) tier = c.to;
  return tier;
}

function openBreakersAt(doc: RunReportDocument, at: number): number {
  const state = new Map<string, string>();
  for (const c of doc.breakers.changes) if (c.at <= at) state.set(`${c.target}/${c.layer}/${c.node}`, c.to);
  return [...state.values()].filter((s) => s === 'open').length;
}

/** The campaign SLO's objectives judged from the report (its stored spec's thresholds). */
export function campaignObjectives(doc: RunReportDocument): SloObjectiveResult[] {
  const spec = doc.campaign?.spec as { slo?: SloThresholds; scenario?: CampaignSpec['scenario'] } | undefined;
  const q = doc.summary.latencyMs;
  const s = doc.summary;
  const elapsedSec = s.throughput.requestsPerSec > 0 ? s.requests / s.throughput.requestsPerSec : 0;
  return sloObjectiveResults(
    {
      requests: s.requests,
      errorRate: s.errorRate,
      p95Ms: q.e2e.p95,
      p99Ms: q.e2e.p99,
      ttftP99Ms: q.ttft.p99,
      ...throughputFigures(s.requests, s.errors, elapsedSec, spec?.scenario),
    },
    effectiveSlo(spec?.slo ?? {}, spec?.scenario),
  );
}

function xml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!,
  );
}

function measuredText(value: number | null): string {
  return value === null ? 'nothing measured' : String(Number(value.toPrecision(6)));
}

interface Case {
  name: string;
  ok: boolean;
  measured: number | null;
  threshold: number;
  text: string;
}

function suite(name: string, className: string, cases: Case[]): string {
  const failures = cases.filter((c) => !c.ok).length;
  const body = cases
    .map((c) => {
      const head = `    <testcase name="${xml(c.name)}" classname="${xml(className)}" time="0"`;
      if (c.ok) return `${head}/>`;
      const message = `measured ${measuredText(c.measured)}, threshold ${measuredText(c.threshold)}`;
      return `${head}>\n      <failure message="${xml(message)}" type="objective-missed">${xml(c.text)}</failure>\n    </testcase>`;
    })
    .join('\n');
  return `  <testsuite name="${xml(name)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="0">\n${body}\n  </testsuite>`;
}

/**
 * JUnit XML for CI: one suite for the campaign SLO (a test case per objective) and one per tier
 * (a test case per tier objective, judged over the whole run); a missed objective is a failure
 * whose message gives the measured value and the threshold.
 */
export function junitXml(doc: RunReportDocument): string {
  const suites = [
    suite(
      'campaign SLO',
      'fathom.slo',
      campaignObjectives(doc).map((r) => ({ name: r.objective, ...r })),
    ),
    ...Object.entries(doc.objectives).map(([tier, results]) =>
      suite(
        `tier ${tier}`,
        `fathom.tier.${tier}`,
        results.map((r) => ({
          name: r.objective,
          ok: r.ok,
          measured: r.value,
          threshold: r.threshold,
          text: r.text,
        })),
      ),
    ),
  ];
  const tests =
    campaignObjectives(doc).length + Object.values(doc.objectives).reduce((n, r) => n + r.length, 0);
  const failures =
    campaignObjectives(doc).filter((r) => !r.ok).length +
    Object.values(doc.objectives).reduce((n, r) => n + r.filter((x) => !x.ok).length, 0);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="fathom run ${xml(doc.runId)}" tests="${tests}" failures="${failures}">\n${suites.join('\n')}\n</testsuites>\n`;
}
