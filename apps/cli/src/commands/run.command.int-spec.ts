import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { childrenOf, environOf } from '@fathom/testing';

const BIN = join(__dirname, '..', '..', '..', '..', 'bin', 'fathom.js');

function fathom(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 90_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

interface CountingTarget {
  /** Its OpenAI base URL (`.../v1`). */
  readonly base: string;
  /** Chat completions it received (each answered 5 ms later): the target's own count. */
  readonly served: number;
  close(): Promise<void>;
}

/**
 * A minimal OpenAI-compatible server: `/v1/models`, and every other request a chat completion
 * 5 ms later, counted.
 */
async function startCountingTarget(): Promise<CountingTarget> {
  let served = 0;
  const completion =
    '{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}';
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/v1/models') {
        res.end('{"object":"list","data":[{"id":"m"}]}');
        return;
      }
      served++;
      setTimeout(() => res.end(completion), 5);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    get served() {
      return served;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
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

  it('exits 2, not 1, when it could not run: a usage error or an unreachable orchestrator', async () => {
    const usage = await fathom(['run', await campaignFile({}), '--no-such-option']);
    expect(usage.code).toBe(2);
    const unreachable = await fathom(['run', await campaignFile({}), '--api', 'http://127.0.0.1:9']);
    expect(unreachable.stderr).toContain('cannot reach the orchestrator at http://127.0.0.1:9');
    expect(unreachable.code).toBe(2);
  });

  it('exits 1 with one verdict block when every request failed', async () => {
    sim.faults.set({ kind: 'http_5xx', rate: 1, status: 503 });
    try {
      const sut = await fathom([
        'run',
        await campaignFile({ p99Ms: 60_000 }, { load: { concurrency: 2, durationMs: 3000 } }),
      ]);
      expect(sut.stdout).toMatch(
        /SLO tier: SLO-breach over the whole run \(no tier had all its objectives hold: SLO-0 missed: availability 0\.00 %/,
      );
      expect(sut.stdout).toMatch(/SLO: FAILED\n\s+- no request succeeded: all \d+ failed/);
      expect(sut.stdout).not.toMatch(/SLO tier: SLO-[01]\b/);
      expect(sut.code).toBe(1);
    } finally {
      sim.faults.clearAll();
    }
  });
});

describe('fathom run FILE, against a target that counts what it served', () => {
  jest.setTimeout(90_000);
  let target: CountingTarget;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fathom-run-counted-'));
    target = await startCountingTarget();
  });

  afterAll(async () => {
    await target.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A non-streamed chat campaign named `name` against the counting target, as a file in `dir`. */
  async function campaignFile(
    name: string,
    load: { concurrency: number; durationMs: number },
  ): Promise<string> {
    const file = join(dir, `${name.replace(/\W+/g, '-')}.yaml`);
    await writeFile(
      file,
      stringify({
        name,
        target: { baseUrl: target.base },
        scenario: { type: 'chat', model: 'm', prompts: ['hi'], maxTokens: 4, stream: false },
        load,
      }),
    );
    return file;
  }

  it('aborts the run on Ctrl-C, prints the partial summary and exits 130', async () => {
    const file = await campaignFile('interrupted', { concurrency: 2, durationMs: 60_000 });
    // With MALLOC_ARENA_MAX set by the caller the run is this process's own (no child node):
    // the Ctrl-C below reaches it directly. The test after this one goes through the child.
    const child = spawn(process.execPath, [BIN, 'run', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MALLOC_ARENA_MAX: '4' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += String(c)));
    child.stderr.on('data', (c) => (stderr += String(c)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 40_000;
    // The run is going once the target sees its requests.
    while (target.served < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(target.served).toBeGreaterThanOrEqual(20);
    if (process.platform === 'linux') expect(childrenOf(child.pid!)).toEqual([]);
    const interruptedAt = Date.now();
    child.kill('SIGINT');
    const code = await exited;

    expect(stderr).toBe(
      'fathom: interrupted: aborting the run for its partial summary (Ctrl-C again quits)\n',
    );
    expect(stdout).toMatch(/Run \S+ \(interrupted\): aborted/);
    expect(stdout).toMatch(/requests [1-9]\d*/);
    expect(code).toBe(130);
    expect(Date.now() - interruptedAt).toBeLessThan(30_000);
  });

  it('keeps the database of a run over 10 minutes in a temporary directory, removed when it ends', async () => {
    const file = await campaignFile('an hour', { concurrency: 2, durationMs: 3_600_000 });
    const scratchParent = await mkdtemp(join(tmpdir(), 'fathom-run-tmpdir-'));
    try {
      const child = spawn(process.execPath, [BIN, 'run', file], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, TMPDIR: scratchParent, MALLOC_ARENA_MAX: undefined },
      });
      let stdout = '';
      child.stdout.on('data', (c) => (stdout += String(c)));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const before = target.served;
      const deadline = Date.now() + 40_000;
      while (target.served - before < 20 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(target.served - before).toBeGreaterThanOrEqual(20);
      // While it runs, the database's files are in one fathom-run-* directory there.
      const scratch = (await readdir(scratchParent)).filter((name) => name.startsWith('fathom-run-'));
      expect(scratch).toHaveLength(1);
      expect(await readdir(join(scratchParent, scratch[0]))).toContain('PG_VERSION');
      // On Linux the run is a child node's, started with MALLOC_ARENA_MAX=2 (bin/fathom.js); the
      // Ctrl-C below is forwarded to it, and its exit code is this process's.
      if (process.platform === 'linux') {
        const runs = childrenOf(child.pid!);
        expect(runs).toHaveLength(1);
        expect(environOf(runs[0])).toContain('MALLOC_ARENA_MAX=2');
      }
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      expect(stdout).toMatch(/Run \S+ \(an hour\): aborted/);
      expect(await readdir(scratchParent)).toEqual([]);
    } finally {
      await rm(scratchParent, { recursive: true, force: true });
    }
  });

  it('reports what the target served, and its CSV lists each second once, summing to it', async () => {
    const file = await campaignFile('counted', { concurrency: 4, durationMs: 4000 });
    const csv = join(dir, 'windows.csv');
    const before = target.served;
    const sut = await fathom(['run', file, '--json', '--quiet', '--out', `csv=${csv}`]);
    const served = target.served - before;
    expect(sut.code).toBe(0);
    const summary = JSON.parse(sut.stdout).summary as { requests: number; errors: number };
    expect(summary.errors).toBe(0);
    expect(summary.requests).toBeGreaterThan(100);
    expect(summary.requests).toBe(served);
    const [header, ...rows] = (await readFile(csv, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => l.split(','));
    const at = rows.map((r) => Number(r[header.indexOf('window_end_ms')]));
    const seconds = rows.map((r) => Number(r[header.indexOf('seconds')]));
    expect(rows.reduce((n, r) => n + Number(r[header.indexOf('requests')]), 0)).toBe(served);
    expect(rows.length).toBeGreaterThanOrEqual(4);
    // Consecutive seconds: a row comes one second after the last, or, after a window a stall made
    // longer, as many seconds as that window covered.
    for (let i = 1; i < rows.length; i++) {
      expect(at[i] - at[i - 1]).toBeLessThanOrEqual(1000 * Math.ceil(seconds[i]));
    }
  });
});
