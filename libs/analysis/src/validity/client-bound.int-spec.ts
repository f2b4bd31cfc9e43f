import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus } from 'node:os';
import type { AddressInfo } from 'node:net';
import { CampaignSpecSchema, envelope, type TelemetryWindow } from '@fathom/contracts';
import { Worker } from 'node:worker_threads';
import { runShard, type WindowSnapshot } from '@fathom/load';
import { assessValidity } from './measurement-validity';
import { assessGenerator, judgeClientBound } from './client-bound';

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

/** Closed load on one shard (3 s unless said); the windows as the analyzer receives them. */
async function windowsOf(url: string, durationMs = 3000): Promise<TelemetryWindow[]> {
  const windows: WindowSnapshot[] = [];
  await runShard({
    spec: CampaignSpecSchema.parse({
      name: 'health',
      target: { baseUrl: url },
      scenario: { type: 'chat', model: 'm', prompts: ['hi'], stream: false },
      load: { concurrency: 4, durationMs },
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

  // A neighbour thread on the engine's one core leaves its event loop idle between responses
  // (no busy loop, no late timers to speak of), yet every response waits for the core before it
  // is stamped: only the thread's own scheduler figures show it.
  const linux = process.platform === 'linux' && existsSync('/proc/thread-self/schedstat');
  (linux ? it : it.skip)(
    'judges a shard that waits for its core behind a neighbour thread client-bound',
    async () => {
      // The target in its own process, answering at once, off the engine's core.
      const server: ChildProcess = spawn(
        process.execPath,
        [
          '-e',
          `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.writeHead(200, { 'content-type': 'application/json' }).end(${JSON.stringify(COMPLETION)})); }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const port = await new Promise<string>((resolve) =>
        server.stdout!.once('data', (d) => resolve(String(d).trim())),
      );
      const mask = execFileSync('taskset', ['-p', String(process.pid)], { encoding: 'utf8' })
        .trim()
        .split(' ')
        .pop()!;
      const core = String(Math.max(0, cpus().length - 1));
      const hogs: Worker[] = [];
      try {
        // Every thread of this process, and the hogs made after, on one core. Beside one hog the
        // engine's wait share was 24-54 % a window, about the 25 % bar, and CI failed once on a
        // 3 s run's five judged windows: two hogs, and more windows below.
        execFileSync('taskset', ['-a', '-p', '-c', core, String(process.pid)]);
        for (let i = 0; i < 2; i++) {
          const hog = new Worker('for (;;) {}', { eval: true });
          hogs.push(hog);
          await new Promise((resolve) => hog.once('online', resolve));
        }
        // 5 s: eight judged windows, so the majority the verdict takes is not one window's luck.
        const windows = await windowsOf(`http://127.0.0.1:${port}/v1`, 5000);
        const sut = judgeClientBound(windows);
        expect(sut).not.toBeNull();
        expect(sut!.figures.coreWaitShareMedian).toBeGreaterThanOrEqual(0.25);
        expect(sut!.detail).toMatch(/median core wait \d+ %/);
        // On its core and waiting for it: two parts of one window, never more than all of it.
        const { coreRunShareMedian: run, coreWaitShareMedian: wait } = sut!.figures;
        expect(run).toBeGreaterThan(0);
        expect(run + wait).toBeLessThanOrEqual(1.02);
      } finally {
        await Promise.all(hogs.map((hog) => hog.terminate()));
        execFileSync('taskset', ['-a', '-p', mask, String(process.pid)]);
        server.kill();
      }
    },
  );

  it('does not judge a shard against a slow target client-bound', async () => {
    const slow = await target(300);
    try {
      const windows = await windowsOf(slow.url);
      expect(windows.every((w) => w.health !== undefined)).toBe(true);
      expect(judgeClientBound(windows)).toBeNull();
      expect(assessValidity(windows, [], false).reasons.map((r) => r.kind)).not.toContain('client-bound');
      // Waiting on the target, the engine's thread is off its core most of each window.
      if (linux) expect(assessGenerator(windows).health!.coreRunShareMedian).toBeLessThan(0.5);
    } finally {
      await slow.close();
    }
  });
});
