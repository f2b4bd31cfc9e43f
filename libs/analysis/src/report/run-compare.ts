import type { RunReportDocument } from './run-report.document';
import type { SeriesWindow } from './run-series';
import { campaignObjectives } from './report-exports';

/**
 * How a change is judged beyond noise (said in every comparison): each run's spread of the metric
 * over its middle windows (first and last dropped: ramp-up and drain) gives a standard error;
 * a change is beyond noise when it exceeds `NOISE_Z` combined standard errors (Welch),
 * sqrt(s_base^2 / n_base + s_cand^2 / n_cand), and also `MIN_RELATIVE_CHANGE` of the base (a
 * very steady run should not flag a 1 % move). With fewer than `MIN_WINDOWS` middle windows on
 * either side the spread is unknown and a change of `UNKNOWN_NOISE_RELATIVE` or more counts.
 */
export const COMPARE_NOISE = {
  NOISE_Z: 2,
  MIN_RELATIVE_CHANGE: 0.05,
  MIN_WINDOWS: 3,
  UNKNOWN_NOISE_RELATIVE: 0.1,
} as const;

export const COMPARE_NOISE_RULE =
  `beyond noise: |change| > ${COMPARE_NOISE.NOISE_Z} x sqrt(s_b^2/n_b + s_c^2/n_c), s and n the per-window ` +
  `standard deviation and count over each run's middle windows, and >= ${COMPARE_NOISE.MIN_RELATIVE_CHANGE * 100} % ` +
  `of the base; with fewer than ${COMPARE_NOISE.MIN_WINDOWS} windows, a change of >= ${COMPARE_NOISE.UNKNOWN_NOISE_RELATIVE * 100} %; ` +
  `the error rate also moves by >= 0.1 percentage point`;

type Direction = 'lower-is-better' | 'higher-is-better';

export interface CompareRow {
  readonly metric: string;
  readonly unit: string;
  readonly base: number | null;
  readonly candidate: number | null;
  /** candidate - base. */
  readonly change: number | null;
  /** change / base. */
  readonly relativeChange: number | null;
  /** The noise band the change was held against (null: unknown, the relative rule applied). */
  readonly noise: number | null;
  readonly beyondNoise: boolean;
  /** better / worse beyond noise, or `same` within it (or nothing to compare). */
  readonly verdict: 'better' | 'worse' | 'same';
  /** The campaign SLO or a tier objective judges this metric. */
  readonly objective: boolean;
  /** An objective's metric got worse beyond noise. */
  readonly regressed: boolean;
}

/** An objective that held in the base run and is missed in the candidate (or the reverse). */
export interface ObjectiveFlip {
  readonly objective: string;
  readonly base: boolean;
  readonly candidate: boolean;
  readonly text: string;
}

export interface RunComparison {
  readonly base: string;
  readonly candidate: string;
  readonly noiseRule: string;
  readonly rows: CompareRow[];
  readonly objectives: ObjectiveFlip[];
  readonly tier: { base: string | null; candidate: string | null };
  readonly validity: { base: boolean; candidate: boolean };
  readonly rootCauses: { added: string[]; removed: string[] };
  /** One line per regression: an objective's metric worse beyond noise, or an objective now missed. */
  readonly regressions: string[];
}

interface MetricDef {
  metric: string;
  unit: string;
  direction: Direction;
  whole: (d: RunReportDocument) => number | null;
  perWindow: (w: SeriesWindow) => number | null;
  /** A smaller change never counts (a ratio that starts at 0 has no relative change). */
  minAbsoluteChange?: number;
}

const LATENCY_METRICS = (['e2e', 'correctedE2e', 'ttft', 'itl'] as const).flatMap((m) =>
  (['p50', 'p95', 'p99'] as const).map((q): MetricDef => ({
    metric: `${m}.${q}`,
    unit: 'ms',
    direction: 'lower-is-better',
    whole: (d) => d.summary.latencyMs[m][q],
    perWindow: (w) => w.latencyMs[m][q],
  })),
);

const METRICS: MetricDef[] = [
  ...LATENCY_METRICS,
  {
    metric: 'errorRate',
    unit: 'ratio',
    direction: 'lower-is-better',
    whole: (d) => d.summary.errorRate,
    perWindow: (w) => (w.requests ? w.errors / w.requests : null),
    // 0.1 percentage point: below it a change is one request in a thousand.
    minAbsoluteChange: 0.001,
  },
  {
    metric: 'requestsPerSec',
    unit: 'req/s',
    direction: 'higher-is-better',
    whole: (d) => d.summary.throughput.requestsPerSec,
    perWindow: (w) => w.requestsPerSec,
  },
  {
    metric: 'outputTokensPerSec',
    unit: 'tok/s',
    direction: 'higher-is-better',
    whole: (d) => d.summary.throughput.outputTokensPerSec,
    perWindow: (w) => w.outputTokensPerSec,
  },
  {
    metric: 'goodputPerSec',
    unit: 'req/s',
    direction: 'higher-is-better',
    whole: (d) => d.summary.semantic.goodput?.goodputPerSec ?? null,
    perWindow: (w) => w.goodputPerSec,
  },
  {
    metric: 'semanticGoodputPerSec',
    unit: 'req/s',
    direction: 'higher-is-better',
    whole: (d) => d.summary.semantic.goodput?.semanticGoodputPerSec ?? null,
    perWindow: (w) => w.semanticGoodputPerSec,
  },
];

/** Metrics each campaign SLO objective judges (`sloObjectiveResults`). */
const SLO_METRICS: Record<string, string> = {
  availability: 'errorRate',
  maxErrorRate: 'errorRate',
  p95Ms: 'e2e.p95',
  p99Ms: 'e2e.p99',
  ttftP99Ms: 'ttft.p99',
};

/** The metrics the campaign SLO and any tier objective of either run judge. */
function objectiveMetrics(docs: RunReportDocument[]): Set<string> {
  const out = new Set<string>();
  for (const d of docs) {
    for (const r of campaignObjectives(d)) if (SLO_METRICS[r.objective]) out.add(SLO_METRICS[r.objective]);
    for (const results of Object.values(d.objectives)) {
      for (const r of results) {
        const latency = /^(e2e|correctedE2e|ttft|itl) (p50|p95|p99)$/.exec(r.objective);
        if (latency) out.add(`${latency[1]}.${latency[2]}`);
        else if (r.objective === 'availability') out.add('errorRate');
        else if (r.objective === 'goodput') out.add('goodputPerSec');
        else if (r.objective === 'semantic-goodput') out.add('semanticGoodputPerSec');
      }
    }
  }
  return out;
}

/** Mean and sample variance of the values over the middle windows (null values skipped). */
function spread(
  doc: RunReportDocument,
  f: (w: SeriesWindow) => number | null,
): { n: number; variance: number } {
  const windows = doc.series?.windows ?? [];
  const values = windows
    .slice(1, -1)
    .map(f)
    .filter((v): v is number => v !== null && Number.isFinite(v));
  const n = values.length;
  if (n < 2) return { n, variance: 0 };
  const mean = values.reduce((a, b) => a + b, 0) / n;
  return { n, variance: values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1) };
}

/** Compares a candidate run with a base run. Pure. */
export function compareRuns(base: RunReportDocument, candidate: RunReportDocument): RunComparison {
  const judged = objectiveMetrics([base, candidate]);
  const rows: CompareRow[] = METRICS.map((m) => {
    const b = m.whole(base);
    const c = m.whole(candidate);
    const objective = judged.has(m.metric);
    if (b === null || c === null)
      return {
        metric: m.metric,
        unit: m.unit,
        base: b,
        candidate: c,
        change: null,
        relativeChange: null,
        noise: null,
        beyondNoise: false,
        verdict: 'same',
        objective,
        regressed: false,
      };
    const change = c - b;
    const relativeChange = b !== 0 ? change / b : c === 0 ? 0 : null;
    const sb = spread(base, m.perWindow);
    const sc = spread(candidate, m.perWindow);
    const known = sb.n >= COMPARE_NOISE.MIN_WINDOWS && sc.n >= COMPARE_NOISE.MIN_WINDOWS;
    const noise = known ? COMPARE_NOISE.NOISE_Z * Math.sqrt(sb.variance / sb.n + sc.variance / sc.n) : null;
    const large =
      relativeChange === null
        ? change !== 0
        : Math.abs(relativeChange) >=
          (known ? COMPARE_NOISE.MIN_RELATIVE_CHANGE : COMPARE_NOISE.UNKNOWN_NOISE_RELATIVE);
    const beyondNoise =
      large && Math.abs(change) >= (m.minAbsoluteChange ?? 0) && (noise === null || Math.abs(change) > noise);
    const worse = m.direction === 'lower-is-better' ? change > 0 : change < 0;
    const verdict = !beyondNoise ? 'same' : worse ? 'worse' : 'better';
    return {
      metric: m.metric,
      unit: m.unit,
      base: b,
      candidate: c,
      change,
      relativeChange,
      noise,
      beyondNoise,
      verdict,
      objective,
      regressed: objective && verdict === 'worse',
    };
  });
  const objectives = objectiveFlips(base, candidate);
  const kindsB = new Set(base.rootCauses.map((c) => c.kind));
  const kindsC = new Set(candidate.rootCauses.map((c) => c.kind));
  const regressions = [
    ...rows
      .filter((r) => r.regressed)
      .map(
        (r) =>
          `${r.metric} ${show(r.base, r.unit)} -> ${show(r.candidate, r.unit)} (${pct(r.relativeChange)}), beyond noise${r.noise === null ? ' (spread unknown)' : ` (+/- ${fmt(r.noise, r.unit)})`}`,
      ),
    ...objectives.filter((o) => o.base && !o.candidate).map((o) => `${o.objective} now missed: ${o.text}`),
  ];
  return {
    base: base.runId,
    candidate: candidate.runId,
    noiseRule: COMPARE_NOISE_RULE,
    rows,
    objectives,
    tier: { base: base.tiers.final, candidate: candidate.tiers.final },
    validity: { base: base.validity.valid, candidate: candidate.validity.valid },
    rootCauses: {
      added: [...kindsC].filter((k) => !kindsB.has(k)),
      removed: [...kindsB].filter((k) => !kindsC.has(k)),
    },
    regressions,
  };
}

/** Objectives judged in both runs whose verdict differs: the campaign SLO's and each tier's. */
function objectiveFlips(base: RunReportDocument, candidate: RunReportDocument): ObjectiveFlip[] {
  const verdicts = (d: RunReportDocument) => {
    const out = new Map<string, { ok: boolean; text: string }>();
    for (const r of campaignObjectives(d)) out.set(`slo ${r.objective}`, { ok: r.ok, text: r.text });
    for (const [tier, results] of Object.entries(d.objectives))
      for (const r of results) out.set(`${tier} ${r.objective}`, { ok: r.ok, text: r.text });
    return out;
  };
  const b = verdicts(base);
  const c = verdicts(candidate);
  const flips: ObjectiveFlip[] = [];
  for (const [name, vb] of b) {
    const vc = c.get(name);
    if (vc && vc.ok !== vb.ok) flips.push({ objective: name, base: vb.ok, candidate: vc.ok, text: vc.text });
  }
  return flips;
}

function fmt(v: number | null, unit = ''): string {
  if (v === null) return 'n/a';
  if (unit === 'ratio') return `${(v * 100).toFixed(2)} %`;
  const abs = Math.abs(v);
  return abs >= 100 ? v.toFixed(0) : abs >= 1 ? v.toFixed(2) : v.toPrecision(3);
}

/** A figure with its unit (ratios as percentages). */
function show(v: number | null, unit: string): string {
  if (v === null) return 'n/a';
  return unit === 'ratio' ? fmt(v, unit) : `${fmt(v)} ${unit}`;
}

function pct(v: number | null): string {
  return v === null ? 'n/a' : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)} %`;
}

/** The comparison as a text table: metric, base, candidate, change, beyond noise, verdict. */
export function formatComparison(c: RunComparison): string {
  const head = ['metric', 'base', 'candidate', 'change', 'beyond noise', ''];
  const body = c.rows.map((r) => [
    `${r.metric}${r.objective ? ' *' : ''}`,
    show(r.base, r.unit),
    show(r.candidate, r.unit),
    r.change === null
      ? 'n/a'
      : `${r.change >= 0 ? '+' : ''}${fmt(r.change, r.unit)} (${pct(r.relativeChange)})`,
    r.change === null
      ? ''
      : r.beyondNoise
        ? 'yes'
        : `no${r.noise === null ? '' : ` (+/- ${fmt(r.noise, r.unit)})`}`,
    r.regressed ? 'REGRESSED' : r.verdict === 'same' ? '' : r.verdict,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  const out = [`Compare base ${c.base} with candidate ${c.candidate}`, line(head), ...body.map(line)];
  out.push('  * judged by an objective (campaign SLO or a tier)');
  out.push(`  ${c.noiseRule}`);
  out.push(
    `tier ${c.tier.base ?? 'n/a'} -> ${c.tier.candidate ?? 'n/a'}; valid ${c.validity.base} -> ${c.validity.candidate}`,
  );
  for (const k of c.rootCauses.added) out.push(`new root cause: ${k}`);
  for (const k of c.rootCauses.removed) out.push(`root cause gone: ${k}`);
  for (const o of c.objectives)
    out.push(
      `objective ${o.objective}: ${o.base ? 'held' : 'missed'} -> ${o.candidate ? 'holds' : 'MISSED'} (${o.text})`,
    );
  out.push(
    c.regressions.length
      ? `REGRESSED: ${c.regressions.length} (${c.regressions.join('; ')})`
      : 'no objective regressed',
  );
  return out.join('\n');
}
