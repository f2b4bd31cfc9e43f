import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CampaignSpecSchema, envelope, type TelemetryWindow } from '@fathom/contracts';
import { runShard, type WindowSnapshot } from '@fathom/load';
import { assessValidity } from './measurement-validity';
import { judgeClientBound } from './client-bound';

const COMPLETION = JSON.stringify({
  id: 'c',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 },
});

/** A target answering every completion after `delayMs`. */
async function target(delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(COMPLETION), delayMs),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Three seconds of closed load on one shard; the windows as the analyzer receives them. */
async function windowsOf(url: string): Promise<TelemetryWindow[]> {
  const windows: WindowSnapshot[] = [];
  await runShard({
    spec: CampaignSpecSchema.parse({
      name: 'health',
      target: { baseUrl: url },
      scenario: { type: 'chat', model: 'm', prompts: ['hi'], stream: false },
      load: { concurrency: 4, durationMs: 3000 },
    }),
    shard: { index: 0, count: 1 },
    runId: 'r',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: () => undefined, window: (w) => windows.push(w) },
    signal: new AbortController().signal,
    windowMs: 500,
  });
  return windows.map((w) => ({ ...envelope('c', 'r'), generatorId: 'g', ...w }));
}

describe('client-bound runs', () => {
  jest.setTimeout(30_000);

  it('judges a shard with a CPU hog beside it client-bound, with the figures', async () => {
    const fast = await target(1);
    // The neighbour: 60 ms of CPU on the engine's thread every 70 ms (what other services on an
    // inline engine thread, or a busy core, do to it).
    const hog = setInterval(() => {
      const until = performance.now() + 60;
      while (performance.now() < until);
    }, 70);
    try {
      const windows = await windowsOf(fast.url);
      const sut = judgeClientBound(windows);
      expect(sut).not.toBeNull();
      expect(sut!.boundWindows / sut!.windows).toBeGreaterThanOrEqual(0.5);
      expect(sut!.figures.loopDelayP99MaxMs).toBeGreaterThan(50);
      const validity = assessValidity(windows, [], false);
      expect(validity.valid).toBe(false);
      expect(validity.reasons[0]).toMatchObject({ kind: 'client-bound' });
      expect(validity.reasons[0].detail).toMatch(/^the client limited this run in \d+ of \d+ windows/);
    } finally {
      clearInterval(hog);
      await fast.close();
    }
  });

  it('does not judge a shard against a slow target client-bound', async () => {
    const slow = await target(300);
    try {
      const windows = await windowsOf(slow.url);
      expect(windows.every((w) => w.health !== undefined)).toBe(true);
      expect(judgeClientBound(windows)).toBeNull();
      expect(assessValidity(windows, [], false).reasons.map((r) => r.kind)).not.toContain('client-bound');
    } finally {
      await slow.close();
    }
  });
});
