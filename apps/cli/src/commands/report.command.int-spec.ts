import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { stringify } from 'yaml';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import type { RunComparison, RunReportDocument } from '@fathom/analysis';

const BIN = join(__dirname, '..', '..', '..', '..', 'bin', 'fathom.js');

function fathom(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { timeout: 120_000, env: { ...process.env, FATHOM_SEMANTIC_EMBEDDER: 'off' } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('fathom run --out, fathom report, fathom compare', () => {
  jest.setTimeout(300_000);
  let sim: SimTarget;
  let dir: string;

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } });
    dir = await mkdtemp(join(tmpdir(), 'fathom-report-'));
  });

  afterAll(async () => {
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function campaignFile(name: string): Promise<string> {
    const file = join(dir, `${name}.yaml`);
    await writeFile(
      file,
      stringify({
        name,
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['Say hello.'], maxTokens: 8 },
        load: { concurrency: 4, durationMs: 3000 },
        slo: { p99Ms: 60_000, maxErrorRate: 0.5 },
      }),
    );
    return file;
  }

  it('writes every export of a run, rewrites them from its data dir, and gates a regression', async () => {
    const dataDir = join(dir, 'db');
    const out = (name: string) => join(dir, name);
    const run = await fathom([
      'run',
      await campaignFile('base'),
      '--data-dir',
      dataDir,
      '--out',
      `html=${out('report.html')}`,
      '--out',
      `json=${out('base.json')}`,
      '--out',
      `csv=${out('windows.csv')}`,
      '--out',
      `junit=${out('slo.xml')}`,
    ]);
    expect(run.stderr).toContain(`wrote ${out('report.html')}`);
    expect(run.code).toBe(0);

    const doc = JSON.parse(await readFile(out('base.json'), 'utf8')) as RunReportDocument;
    expect(doc.summary.requests).toBeGreaterThan(0);
    const html = await readFile(out('report.html'), 'utf8');
    expect(html).toContain(`data-slo="passed" data-tier="${doc.tiers.final ?? ''}"`);
    const windows = (await readFile(out('windows.csv'), 'utf8')).trimEnd().split('\r\n');
    expect(windows).toHaveLength(doc.series!.windows.length + 1);
    expect(windows[0]).toMatch(/^window_end,window_end_ms,seconds,requests,errors,/);
    const records = (await readFile(out('windows.records.csv'), 'utf8')).trimEnd().split('\r\n');
    expect(records).toHaveLength(doc.series!.records.length + 1);
    const junit = new XMLParser({ ignoreAttributes: false }).parse(await readFile(out('slo.xml'), 'utf8'));
    const suites = [junit.testsuites.testsuite].flat() as Array<Record<string, string>>;
    expect(suites.map((s) => s['@_name'])).toEqual([
      'campaign SLO',
      ...Object.keys(doc.objectives).map((t) => `tier ${t}`),
    ]);
    expect(suites[0]['@_failures']).toBe('0');

    // The same report again, from the run's embedded database.
    const again = await fathom([
      'report',
      doc.runId,
      '--data-dir',
      dataDir,
      '--out',
      `html=${out('again.html')}`,
    ]);
    expect(again).toMatchObject({ code: 0, stdout: `wrote ${out('again.html')}\n` });
    expect(await readFile(out('again.html'), 'utf8')).toBe(html);

    // A candidate 1 s slower per request (20 s model time at timeScale 0.05): the P99 objective's
    // metric regressed, by far more than the 10 % a short run's unknown noise asks for.
    sim.faults.set({ kind: 'latency_spike', addMs: 20_000 });
    const slow = await fathom([
      'run',
      await campaignFile('candidate'),
      '--out',
      `json=${out('candidate.json')}`,
    ]);
    sim.faults.clearAll();
    expect(slow.code).toBe(0);
    const same = await fathom(['compare', out('base.json'), out('base.json')]);
    expect(same.stdout).toContain('no objective regressed');
    expect(same.code).toBe(0);
    const worse = await fathom([
      'compare',
      out('base.json'),
      out('candidate.json'),
      '--out',
      `json=${out('compare.json')}`,
    ]);
    expect(worse.stdout).toMatch(/^e2e\.p99 \*.*yes\s+REGRESSED$/m);
    expect(worse.code).toBe(1);
    const comparison = JSON.parse(await readFile(out('compare.json'), 'utf8')) as RunComparison;
    expect(comparison.regressions.some((r) => r.startsWith('e2e.p99 '))).toBe(true);
  });

  it('exits 2 naming what is wrong: a bad --out, an unknown run, a missing data dir', async () => {
    const bad = await fathom(['run', await campaignFile('x'), '--out', 'pdf=x.pdf']);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toContain('--out pdf=x.pdf: expected FORMAT=PATH');
    const nowhere = await fathom(['report', 'no-such-run', '--out', 'html=x.html']);
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toContain('--api URL or --data-dir DIR');
    const missing = await fathom(['report', 'r', '--data-dir', join(dir, 'nope'), '--out', 'html=x.html']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such folder');
    const notReport = join(dir, 'not-a-report.json');
    await writeFile(notReport, '{"hello": 1}');
    const wrong = await fathom(['compare', notReport, notReport]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('is not a Fathom run report');
  });
});
