import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';

const BIN = join(__dirname, '..', '..', '..', '..', 'bin', 'fathom.js');

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** `fathom ARGS` with stdout and stderr on pipes (not a terminal). */
function fathom(args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 90_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/** `fathom ARGS` on a pseudo-terminal (util-linux `script`): stdout and stderr together. */
function fathomOnTerminal(args: string[]): Promise<Result> {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  return new Promise((resolve) => {
    execFile(
      'script',
      ['--quiet', '--return', '--command', command, '/dev/null'],
      { timeout: 90_000, env: { ...process.env, COLUMNS: '200', TERM: 'xterm' } },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

const REDRAW = '\x1b[3F\x1b[J';

describe('fathom run: live progress', () => {
  jest.setTimeout(180_000);
  let sim: SimTarget;
  let dir: string;
  let file: string;

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0 });
    dir = await mkdtemp(join(tmpdir(), 'fathom-progress-'));
    file = join(dir, 'campaign.yaml');
    // The file's target is a closed port and its duration 1 s: --target and --duration replace them.
    const campaign = {
      name: 'progress',
      target: { baseUrl: 'http://127.0.0.1:9/v1' },
      scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['Say hello.'], maxTokens: 8 },
      load: { concurrency: 2, durationMs: 1000 },
      slo: { p99Ms: 60_000 },
    };
    await writeFile(file, stringify(campaign));
  });

  afterAll(async () => {
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('redraws one block in place on a terminal, then prints the summary', async () => {
    // 5 s: the tier is judged once a request has ended after the 2 s warm-up ('-' until then).
    const sut = await fathomOnTerminal(['run', file, '--target', `${sim.url}/v1`, '--duration', '5s']);
    expect(sut.stdout).toMatch(/Run \S+ \(progress\): completed/);
    const redraws = sut.stdout.split(REDRAW).length - 1;
    expect(redraws).toBeGreaterThanOrEqual(2);
    expect(sut.stdout).toMatch(
      /running \d:\d\d \/ 0:05 \(\d s left\) +[\d.]+ req\/s +requests \d+ +errors 0/,
    );
    expect(sut.stdout).toMatch(/e2e {2}P50 [\d.]+ m?s {2}P99 [\d.]+ m?s {4}TTFT {2}P50 [\d.]+ m?s/);
    expect(sut.stdout).toMatch(/tier - {2}breakers: none open {2}validity: ok/);
    expect(sut.stdout).toMatch(/tier SLO-\d {2}breakers: none open {2}validity: ok/);
    // The last block is erased before the summary.
    expect(sut.stdout.lastIndexOf(REDRAW)).toBeLessThan(sut.stdout.indexOf('Run '));
    expect(sut.code).toBe(0);
  });

  it('shows nothing with --quiet on a terminal', async () => {
    const sut = await fathomOnTerminal(['run', file, '--target', `${sim.url}/v1`, '--quiet']);
    expect(sut.stdout).toMatch(/Run \S+ \(progress\): completed/);
    expect(sut.stdout).not.toContain('\x1b[');
    expect(sut.stdout).not.toContain('req/s  requests');
    expect(sut.code).toBe(0);
  });

  it('writes a plain line every 5 s to stderr when it is not a terminal', async () => {
    const sut = await fathom(['run', file, '--target', `${sim.url}/v1`, '--duration', '6s']);
    expect(sut.stderr).not.toContain('\x1b');
    const lines = sut.stderr.split('\n').filter((l) => l.startsWith('progress '));
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines[0]).toMatch(
      /^progress \d:\d\d \/ 0:06 \(\d s left\) (pending|running): [\d.]+ req\/s, requests \d+, errors 0 \(0\.00 %\); e2e P50 .*; TTFT P50 .*; tier .*; breakers: none open; validity: ok \(late 0, dropped 0, 0\.0 % behind\)$/,
    );
    expect(sut.stdout).toMatch(/^Run \S+ \(progress\): completed/);
    expect(sut.code).toBe(0);
  });

  describe('with --api', () => {
    let fathomApi: EmbeddedFathom;
    beforeAll(async () => {
      fathomApi = await startEmbedded({ dataDir: null, port: 0, logLevels: false });
    });
    afterAll(async () => {
      await fathomApi.close();
    });

    it('polls GET /v1/runs/:id/progress and redraws the same block', async () => {
      const sut = await fathomOnTerminal([
        'run',
        file,
        '--api',
        fathomApi.url,
        '--target',
        `${sim.url}/v1`,
        '--duration',
        '3s',
      ]);
      expect(sut.stdout).toMatch(/Run \S+ \(progress\): completed/);
      expect(sut.stdout.split(REDRAW).length - 1).toBeGreaterThanOrEqual(2);
      expect(sut.stdout).toMatch(/running \d:\d\d \/ 0:03 .* req\/s +requests [1-9]\d*/);
      expect(sut.code).toBe(0);
    });
  });
});
