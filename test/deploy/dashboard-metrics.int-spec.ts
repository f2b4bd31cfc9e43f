import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { startEmbedded, waitForRun, type EmbeddedFathom } from '@fathom/runtime';

const ROOT = join(__dirname, '..', '..');
const DASHBOARDS = join(ROOT, 'deploy', 'grafana', 'dashboards');
const RULES = join(ROOT, 'deploy', 'prometheus', 'rules', 'fathom.rules.yml');

/** Series Prometheus itself adds to every scrape (https://prometheus.io/docs/concepts/jobs_instances/). */
const SCRAPE_SERIES = ['up', 'scrape_duration_seconds', 'scrape_samples_scraped', 'scrape_series_added'];
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'and',
  'or',
  'unless',
]);

/** The metric names a PromQL expression selects (functions, grouping labels, matchers and strings left out). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\w+/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*(\()?)/g)) {
    const before = bare[m.index - 1];
    if (m[1] || KEYWORDS.has(m[0]) || (before && /[\d.]/.test(before))) continue;
    names.add(m[0]);
  }
  return [...names];
}

interface Panel {
  title?: string;
  targets?: Array<{ expr?: string }>;
  panels?: Panel[];
}

/** Every query of every dashboard (panel targets, and the metric of each label_values variable). */
function dashboardQueries(): Array<{ where: string; expr: string }> {
  const queries: Array<{ where: string; expr: string }> = [];
  for (const file of readdirSync(DASHBOARDS).filter((f) => f.endsWith('.json'))) {
    const dashboard = JSON.parse(readFileSync(join(DASHBOARDS, file), 'utf8')) as {
      panels: Panel[];
      templating?: { list: Array<{ name: string; definition?: string }> };
    };
    const walk = (panels: Panel[]): void => {
      for (const panel of panels) {
        for (const target of panel.targets ?? [])
          if (target.expr) queries.push({ where: `${file}: ${panel.title}`, expr: target.expr });
        walk(panel.panels ?? []);
      }
    };
    walk(dashboard.panels);
    for (const variable of dashboard.templating?.list ?? []) {
      const selector = /label_values\((.*),\s*\w+\)$/.exec(variable.definition ?? '')?.[1];
      if (selector) queries.push({ where: `${file}: $${variable.name}`, expr: selector });
    }
  }
  return queries;
}

/** Recording rules by name, and the alert rules' expressions. */
function rules(): { records: Map<string, string>; alerts: Array<{ where: string; expr: string }> } {
  const doc = parse(readFileSync(RULES, 'utf8')) as {
    groups: Array<{ rules: Array<{ record?: string; alert?: string; expr: string }> }>;
  };
  const records = new Map<string, string>();
  const alerts: Array<{ where: string; expr: string }> = [];
  for (const rule of doc.groups.flatMap((g) => g.rules)) {
    if (rule.record) records.set(rule.record, rule.expr);
    if (rule.alert) alerts.push({ where: `alert ${rule.alert}`, expr: rule.expr });
  }
  return { records, alerts };
}

/** Names in a Prometheus text exposition, with a histogram's or summary's series names. */
async function exported(url: string): Promise<string[]> {
  const text = await (await fetch(url)).text();
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\w+)/gm)) {
    names.add(name);
    if (type === 'histogram') ['_bucket', '_sum', '_count'].forEach((s) => names.add(name + s));
    if (type === 'summary') ['_sum', '_count'].forEach((s) => names.add(name + s));
  }
  for (const [, name] of text.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/gm)) names.add(name);
  return [...names];
}

describe('Grafana dashboards and Prometheus rules', () => {
  jest.setTimeout(120_000);
  let sim: SimTarget;
  let legacySim: SimTarget;
  let fathom: EmbeddedFathom;
  const names = new Set<string>(SCRAPE_SERIES);

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0 });
    // Older vLLM names, which the rules accept with `or`: the sim serves them when asked.
    legacySim = await startSimTarget({ port: 0, config: { metrics: { legacyNames: true } } as never });
    fathom = await startEmbedded({ dataDir: null, port: 0, logLevels: false });
    for (const url of [
      `${sim.url}/metrics`,
      `${sim.url}/dcgm/metrics`,
      `${legacySim.url}/metrics`,
      `${fathom.url}/metrics`,
    ])
      for (const name of await exported(url)) names.add(name);
  });

  afterAll(async () => {
    await fathom?.close();
    await sim?.close();
    await legacySim?.close();
  });

  it('reads the metric names out of PromQL', () => {
    expect(
      metricNames(
        'histogram_quantile(0.99, sum by (run_id, le) (rate(fathom_run_latency_seconds_bucket{run_id=~"$run", metric="e2e"}[1m]))) or vector(0)',
      ),
    ).toEqual(['fathom_run_latency_seconds_bucket']);
    expect(metricNames('max by (instance, gpu) (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.8')).toEqual([
      'DCGM_FI_DEV_FB_USED',
      'DCGM_FI_DEV_FB_FREE',
    ]);
    expect(metricNames('fathom:vllm_e2e_latency_seconds:p99_1m{job=~"$job"} > 1.2e3')).toEqual([
      'fathom:vllm_e2e_latency_seconds:p99_1m',
    ]);
  });

  it('names in every query a metric that a Fathom service or the target exports', () => {
    const { records, alerts } = rules();
    const resolve = (name: string, seen: Set<string> = new Set()): string[] =>
      records.has(name) && !seen.has(name)
        ? metricNames(records.get(name)!).flatMap((n) => resolve(n, new Set([...seen, name])))
        : [name];
    const queries = [...dashboardQueries(), ...alerts];
    expect(queries.length).toBeGreaterThan(20);
    const missing = queries.flatMap(({ where, expr }) =>
      metricNames(expr)
        .flatMap((n) => resolve(n))
        .filter((n) => !names.has(n))
        .map((n) => `${where}: ${n}`),
    );
    expect(missing).toEqual([]);
  });

  it("shows a run's live measurements on Fathom's /metrics, equal to its summary", async () => {
    const { runId } = await fathom.campaigns.submit(
      {
        name: 'metrics',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['Say hello.'], maxTokens: 8 },
        load: { concurrency: 2, durationMs: 1500 },
      },
      'cli',
    );
    const run = await waitForRun(fathom.runs, runId, { timeoutMs: 60_000 });
    const text = await (await fetch(`${fathom.url}/metrics`)).text();
    const value = (series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(series));
      return line ? Number(line.split(' ').at(-1)) : null;
    };
    const requests = run.summary!.requests;
    expect(requests).toBeGreaterThan(0);
    expect(value(`fathom_run_requests_total{run_id="${runId}"`)).toBe(requests);
    expect(value(`fathom_run_latency_seconds_count{run_id="${runId}",metric="e2e"`)).toBe(requests);
    expect(value(`fathom_run_latency_seconds_bucket{run_id="${runId}",metric="ttft",le="+Inf"`)).toBe(
      requests,
    );
    expect(text).toMatch(
      new RegExp(`fathom_run_tier\\{run_id="${runId}",tier="[^"]+",service="fathom"\\} 1`),
    );
    expect(value(`fathom_run_valid{run_id="${runId}"`)).not.toBeNull();
  });
});
