import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import type { CampaignSpec } from '@fathom/contracts';
import { CampaignSpecSchema } from '@fathom/contracts';
import { probeTarget, withResolvedModel } from './target-probe';

describe(probeTarget.name, () => {
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/broken/v1/models') {
        res.statusCode = 500;
        res.end('{"error":"model registry down"}');
        return;
      }
      if (req.url === '/endless/v1/models') {
        // A list that never ends, as fast as the socket takes it.
        res.write('{"object":"list","data":[');
        const entries = '{"id":"m"},'.repeat(4096);
        const pump = () => {
          while (!res.destroyed && res.write(entries));
        };
        res.on('drain', pump);
        pump();
        return;
      }
      if (req.url === '/models') {
        res.statusCode = 404;
        res.end('not found');
        return;
      }
      res.end(
        req.url === '/v1/models'
          ? JSON.stringify({ object: 'list', data: [{ id: 'm-1' }, { id: 'm-2' }] })
          : '{}',
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );

  it('does not blame the target when this process itself stalled through the probe', async () => {
    // The target in its own process, answering in 20 ms; this process then blocks for 1.5 s.
    const child = spawn(process.execPath, [
      '-e',
      `require('node:http').createServer((q, s) => setTimeout(() => s.end('{"data":[{"id":"m"}]}'), 20))
         .listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
    ]);
    try {
      const port = await new Promise<string>((resolve) =>
        child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())),
      );
      const probing = probeTarget(`http://127.0.0.1:${port}/v1`, { timeoutMs: 1000 });
      const until = Date.now() + 1500;
      while (Date.now() < until) {
        // busy: the event loop is stalled, as under 200 shards on 2 cores
      }
      const sut = await probing;
      expect(sut.reachable).not.toBe(false);
      if (sut.reachable === 'unknown') {
        expect(sut.stalledMs).toBeGreaterThanOrEqual(1000);
        expect(sut.reason).toMatch(/the load-generator itself stalled \d+ ms/);
      }
    } finally {
      child.kill();
    }
  });

  it('reads the models a reachable target serves', async () => {
    expect(await probeTarget(base, { timeoutMs: 2000 })).toEqual({
      reachable: true,
      models: ['m-1', 'm-2'],
      lookup: null,
    });
  });

  it('says what the model look-up got: the HTTP status and the URL asked', async () => {
    const sut = await probeTarget(base.replace('/v1', '/broken/v1'), { timeoutMs: 2000 });
    expect(sut).toMatchObject({ reachable: true, models: [] });
    expect(sut.reachable === true && sut.lookup).toBe(
      `GET ${base.replace('/v1', '/broken/v1')}/models answered HTTP 500 ({"error":"model registry down"})`,
    );
  });

  it('says when the base URL lacks /v1', async () => {
    const sut = await probeTarget(base.replace('/v1', ''), { timeoutMs: 2000 });
    expect(sut.reachable === true && sut.lookup).toMatch(
      /answered HTTP 404 \(not found\); the base URL does not end in \/v1/,
    );
  });

  it('says when a 200 answer is not a model list', async () => {
    const sut = await probeTarget(`${base}/other`, { timeoutMs: 2000 });
    expect(sut.reachable === true && sut.lookup).toMatch(/answered 200 with a body that is not a model list/);
  });

  it('stops reading a models answer without end, saying so', async () => {
    // Before, the answer was held whole until the probe's timeout: hundreds of MB.
    const started = performance.now();
    const sut = await probeTarget(base.replace('/v1', '/endless/v1'), { timeoutMs: 30_000 });
    expect(sut).toMatchObject({ reachable: true, models: [] });
    expect(sut.reachable === true && sut.lookup).toMatch(
      /answered HTTP 200 with more than 4 MiB: not read further$/,
    );
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('says why a target is unreachable', async () => {
    const sut = await probeTarget('http://127.0.0.1:9/v1', { timeoutMs: 2000 });
    expect(sut.reachable).toBe(false);
    expect(sut.reachable === false && sut.reason).toMatch(
      /^target unreachable: http:\/\/127\.0\.0\.1:9\/v1\/models: ECONNREFUSED/,
    );
  });

  it('says how long it waited for a target that accepts and never answers (no stray error code)', async () => {
    const silent = createNetServer((socket) => socket.resume());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      const sut = await probeTarget(`http://127.0.0.1:${port}/v1`, { timeoutMs: 300 });
      expect(sut.reachable === false && sut.reason).toBe(
        `target unreachable: http://127.0.0.1:${port}/v1/models: no answer within 300 ms`,
      );
    } finally {
      silent.close();
    }
  });
});

describe(withResolvedModel.name, () => {
  const spec = (model?: string): CampaignSpec =>
    CampaignSpecSchema.parse({
      name: 'x',
      target: { baseUrl: 'http://127.0.0.1:1/v1' },
      scenario: { type: 'chat', prompts: ['hi'], ...(model ? { model } : {}) },
      load: { concurrency: 1, durationMs: 100 },
    });

  it('takes the first listed model when the scenario names none', () => {
    expect(withResolvedModel(spec(), ['m-1', 'm-2'])).toMatchObject({ scenario: { model: 'm-1' } });
  });

  it('keeps a model the scenario names', () => {
    expect(withResolvedModel(spec('mine'), ['m-1'])).toMatchObject({ scenario: { model: 'mine' } });
  });

  it('refuses when there is nothing to choose from, saying what the look-up got', () => {
    expect(withResolvedModel(spec(), [], 'GET http://h/v1/models answered HTTP 500')).toBe(
      'scenario.model is not set and the model look-up found none: GET http://h/v1/models answered HTTP 500; name the model in the campaign',
    );
  });
});
