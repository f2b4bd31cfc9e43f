import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGpuFixture } from '../testing/fixture.util';
import { nvidiaSmiArgs, runNvidiaSmi } from './nvidia-smi.runner';
import { ScrapeBackoff } from './scrape-backoff';
import { MAX_SCRAPE_BYTES, scrapeSource } from './scrape-source';

describe(scrapeSource.name, () => {
  let server: Server;
  let base: string;
  const pending = new Set<NodeJS.Timeout>();

  beforeAll(async () => {
    const dcgm = readGpuFixture('dcgm/dcgm-exporter-sample-h100-8gpu-k8s.prom');
    server = createServer((req, res) => {
      if (req.url === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(dcgm);
      } else if (req.url === '/unavailable') {
        res.writeHead(503);
        res.end('Service Unavailable');
      } else if (req.url === '/slow') {
        const timer = setTimeout(() => res.end(dcgm), 2000);
        pending.add(timer);
      } else if (req.url === '/slow-body') {
        res.writeHead(200);
        res.write(dcgm.slice(0, 200));
        const timer = setTimeout(() => res.end(dcgm.slice(200)), 2000);
        pending.add(timer);
      } else if (req.url === '/garbage') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body><h1>Welcome to nginx!</h1></body></html>');
      } else if (req.url === '/endless') {
        // Metrics-looking lines without end, as fast as the socket takes them.
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        const line = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-x"} 33\n'.repeat(1000);
        const pump = () => {
          while (!res.destroyed && res.write(line));
        };
        res.on('drain', pump);
        pump();
      } else if (req.url === '/truncated') {
        res.writeHead(200);
        res.end('DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-x" 3');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    pending.forEach(clearTimeout);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reads a healthy dcgm-exporter endpoint', async () => {
    const sut = await scrapeSource({ url: `${base}/metrics`, format: 'auto', timeoutMs: 2000 });
    expect(sut.health).toBe('ok');
    expect(sut.samples).toHaveLength(30);
    expect(
      sut.samples.find((s) => s.metric === 'power_w' && s.gpu === 'GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005')
        ?.value,
    ).toBe(113.611);
  });

  it('reports a 503 as down, with no samples', async () => {
    const sut = await scrapeSource({ url: `${base}/unavailable`, format: 'auto', timeoutMs: 2000 });
    expect(sut).toMatchObject({ health: 'down', samples: [], error: expect.stringContaining('HTTP 503') });
  });

  it('reports a refused connection as down', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const sut = await scrapeSource({
      url: `http://127.0.0.1:${port}/metrics`,
      format: 'dcgm',
      timeoutMs: 2000,
    });
    expect(sut.health).toBe('down');
    expect(sut.samples).toEqual([]);
    expect(sut.error).toMatch(/ECONNREFUSED|fetch failed/);
  });

  it.each(['/slow', '/slow-body'])('reports %s (slower than the deadline) as timeout', async (path) => {
    const sut = await scrapeSource({ url: `${base}${path}`, format: 'auto', timeoutMs: 300 });
    expect(sut).toMatchObject({ health: 'timeout', samples: [] });
    expect(sut.durationMs).toBeLessThan(1500);
  });

  it('stops reading an endless answer past its cap: garbage, within the deadline', async () => {
    // Before, the whole answer was held until the timeout: hundreds of MB every interval.
    const sut = await scrapeSource({ url: `${base}/endless`, format: 'auto', timeoutMs: 30_000 });
    expect(sut).toMatchObject({ health: 'garbage', samples: [] });
    expect(sut.error).toContain(`answer over ${MAX_SCRAPE_BYTES / 1024 / 1024} MiB`);
    expect(sut.durationMs).toBeLessThan(10_000);
  });

  it.each(['/garbage', '/truncated'])('reports %s as garbage, never zeros', async (path) => {
    const sut = await scrapeSource({ url: `${base}${path}`, format: 'auto', timeoutMs: 2000 });
    expect(sut.health).toBe('garbage');
    expect(sut.samples).toEqual([]);
    expect(sut.error).toBeTruthy();
  });
});

describe(ScrapeBackoff.name, () => {
  it('grows exponentially to the cap and resets on success', () => {
    const sut = new ScrapeBackoff({ intervalMs: 1000, initialBackoffMs: 500, factor: 2, maxBackoffMs: 3000 });
    expect(sut.record('ok')).toBe(1000);
    expect(['down', 'timeout', 'garbage', 'down', 'down'].map((h) => sut.record(h as 'down'))).toEqual([
      500, 1000, 2000, 3000, 3000,
    ]);
    expect(sut.consecutiveFailures).toBe(5);
    expect(sut.record('ok')).toBe(1000);
    expect(sut.record('down')).toBe(500);
  });

  it('refuses a cap below the first backoff', () => {
    expect(() => new ScrapeBackoff({ intervalMs: 1000, maxBackoffMs: 10 })).toThrow();
  });
});

describe(runNvidiaSmi.name, () => {
  let dir: string;
  const script = (name: string, body: string) => {
    const path = join(dir, name);
    writeFileSync(path, `#!/bin/sh\n${body}\n`);
    chmodSync(path, 0o755);
    return path;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'fathom-nvsmi-'));
    writeFileSync(join(dir, 'load.csv'), readGpuFixture('nvidia-smi/h100-query-gpu-full-load.csv'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs the binary with the query-gpu CSV arguments and parses its output', async () => {
    const fake = script('nvidia-smi', `echo "$@" > "${dir}/args"; cat "${dir}/load.csv"`);
    const sut = await runNvidiaSmi({ binary: fake });
    expect(sut.health).toBe('ok');
    expect(sut.samples.find((s) => s.metric === 'power_w')?.value).toBe(631.95);
    expect(readFileSync(join(dir, 'args'), 'utf8').trim()).toBe(nvidiaSmiArgs().join(' '));
  });

  it('says clearly when nvidia-smi is absent', async () => {
    const sut = await runNvidiaSmi({ binary: join(dir, 'no-such-nvidia-smi') });
    expect(sut).toMatchObject({ health: 'down', samples: [], error: expect.stringContaining('not found') });
  });

  it('reports a driver failure (non-zero exit) as down with its message', async () => {
    const fake = script(
      'failing',
      'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver." >&2; exit 9',
    );
    const sut = await runNvidiaSmi({ binary: fake });
    expect(sut.health).toBe('down');
    expect(sut.error).toContain("couldn't communicate");
  });

  it('reports a hang as timeout and unreadable output as garbage', async () => {
    const hung = await runNvidiaSmi({ binary: script('hung', 'exec sleep 5'), timeoutMs: 200 });
    expect(hung).toMatchObject({ health: 'timeout', samples: [] });
    const garbage = await runNvidiaSmi({ binary: script('garbage', 'echo "Segmentation fault"') });
    expect(garbage).toMatchObject({ health: 'garbage', samples: [] });
  });
});
