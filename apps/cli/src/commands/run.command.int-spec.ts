import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startSimTarget, type SimTarget } from '@fathom/sim';

const BIN = join(__dirname, '..', '..', '..', '..', 'bin', 'fathom.js');

function fathom(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 90_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe('fathom run FILE', () => {
  jest.setTimeout(120_000);
  let sim: SimTarget;
  let dir: string;

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0 });
    dir = await mkdtemp(join(tmpdir(), 'fathom-run-'));
  });

  afterAll(async () => {
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function campaignFile(
    slo: Record<string, number>,
    extra: Record<string, unknown> = {},
  ): Promise<string> {
    const file = join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
    const campaign = {
      name: 'cli run',
      target: { baseUrl: `${sim.url}/v1` },
      scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['Say hello.'], maxTokens: 8 },
      load: { concurrency: 2, durationMs: 1000 },
      slo,
      ...extra,
    };
    await writeFile(file, stringify(campaign));
    return file;
  }

  it('prints the summary and exits 0 when every SLO holds', async () => {
    // --quiet: without it a run longer than 5 s writes progress lines to stderr (not a terminal).
    const sut = await fathom(['run', await campaignFile({ p99Ms: 60_000 }), '--quiet']);
    expect(sut.stderr).toBe('');
    expect(sut.stdout).toMatch(/Run \S+ \(cli run\): completed/);
    expect(sut.stdout).toContain('SLO: passed');
    expect(sut.code).toBe(0);
  });

  it('exits 1 and names the objective when an SLO fails', async () => {
    const sut = await fathom(['run', await campaignFile({ p99Ms: 0.001 })]);
    expect(sut.stdout).toMatch(/SLO: FAILED\n\s+- P99 [\d.]+ ms > 0.001 ms/);
    expect(sut.code).toBe(1);
  });

  it('exits 2 naming the field of an invalid campaign', async () => {
    const sut = await fathom([
      'run',
      await campaignFile({}, { load: { concurrency: -1, durationMs: 1000 } }),
    ]);
    expect(sut.stderr).toContain('load.concurrency');
    expect(sut.code).toBe(2);
  });

  it('exits 2 with the line of a file that is not YAML', async () => {
    const file = join(dir, 'broken.yaml');
    await writeFile(file, 'name: x\nload: [1, 2\n');
    const sut = await fathom(['run', file]);
    expect(sut.stderr).toMatch(/broken\.yaml:\d+:\d+/);
    expect(sut.code).toBe(2);
  });
});
