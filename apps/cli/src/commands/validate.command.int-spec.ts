import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..', '..');
const BIN = join(ROOT, 'bin', 'fathom.js');

function fathom(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('fathom validate FILE, fathom --version', () => {
  jest.setTimeout(60_000);
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fathom-validate-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('exits 0 and describes a valid campaign', async () => {
    const sut = await fathom(['validate', join(ROOT, 'examples', 'chat-smoke.yaml')]);
    expect(sut.stdout).toMatch(
      /chat-smoke\.yaml: valid campaign 'chat smoke' \(scenario chat, profile closed/,
    );
    expect(sut.code).toBe(0);
  });

  it('exits 2 and names every bad field by its path', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(
      file,
      [
        'name: ""',
        'target: { baseUrl: not-a-url }',
        'scenario: { type: chat, prompts: [hi], maxTokens: -1 }',
        'load: { concurrency: 0, durationMs: 1000, colour: blue, profile: { type: poisson } }',
        'slo: { p99Ms: -5 }',
      ].join('\n'),
    );
    const sut = await fathom(['validate', file]);
    expect(sut.code).toBe(2);
    expect(sut.stdout).toBe('');
    const fields = [...sut.stderr.matchAll(/^ {2}([\w.]+): /gm)].map((m) => m[1]).sort();
    expect(fields).toEqual(
      [
        'load.colour',
        'load.concurrency',
        'load.profile.ratePerSec',
        'name',
        'scenario.maxTokens',
        'slo.p99Ms',
        'target.baseUrl',
      ].sort(),
    );
    expect(sut.stderr).toContain(`bad.yaml: 7 invalid field(s)`);
  });

  it('exits 2 with the line and column of a syntax error', async () => {
    const file = join(dir, 'broken.yaml');
    await writeFile(file, 'name: x\nload: [1, 2\n');
    const sut = await fathom(['validate', file]);
    expect(sut.stderr).toMatch(/broken\.yaml:\d+:\d+/);
    expect(sut.code).toBe(2);
  });

  it('prints the version of package.json', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const sut = await fathom(['--version']);
    expect(sut.stdout).toBe(`${version}\n`);
    expect(sut.code).toBe(0);
  });
  it('stops quietly with 141 when the reader closes its output early (`| head`)', async () => {
    const child = spawn(process.execPath, [BIN, 'run', '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    // The read end closes before the child writes its help: its write gets EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(stderr).toBe('');
    expect(code).toBe(141);
  });
});
