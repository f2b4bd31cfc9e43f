import { createServer, type AddressInfo, type Socket } from 'node:net';
import { CampaignSpecSchema, type CampaignSpecInput, type RequestRecord } from '@fathom/contracts';
import type { DriverOutcome, DriverRequest, RequestDriver } from '../driver/request-outcome';
import { mergeWindows, type WindowSnapshot } from '../measure/window.snapshot';
import { runShard, type RunShardOptions } from './run-shard';

/** A driver with a bug: every other request ignores its cancellation and never ends. */
class HalfHangingDriver implements RequestDriver {
  calls = 0;
  closed = false;
  constructor(private readonly closeHangs: boolean) {}
  execute(request: DriverRequest): Promise<DriverOutcome> {
    this.calls++;
    if (this.calls % 2 === 1) return new Promise(() => undefined);
    return new Promise((resolve) =>
      setTimeout(
        () =>
          resolve({
            status: 200,
            e2eMs: performance.now() - request.startMono,
            ttftMs: null,
            chunkOffsetsMs: [],
            errorClass: null,
            inputTokensClient: request.item.inputTokensClient,
            outputTokensClient: 1,
            usage: null,
            content: 'ok',
            finishReason: 'stop',
          }),
        5,
      ),
    );
  }
  close(): Promise<void> {
    this.closed = true;
    return this.closeHangs ? new Promise(() => undefined) : Promise.resolve();
  }
}

/** A driver whose set-up never ends (a target that accepts and never answers, a long client timeout). */
class StuckPreparingDriver extends HalfHangingDriver {
  prepare(): Promise<void> {
    return new Promise(() => undefined);
  }
}

let driver: HalfHangingDriver;
jest.mock('./driver.factory', () => ({
  ...jest.requireActual('./driver.factory'),
  createDriver: async () => driver,
}));

function spec(load: Partial<CampaignSpecInput['load']>) {
  return CampaignSpecSchema.parse({
    name: 'settle guard',
    target: { baseUrl: 'http://127.0.0.1:9' },
    scenario: { type: 'chat', prompts: ['Say hello'], maxTokens: 8 },
    load: { concurrency: 2, durationMs: 400, requestTimeoutMs: 100, ...load },
  });
}

/** Runs one shard of `campaign` until it ends; `abortAfterMs`: the run is aborted that long after the start. */
function runOne(
  campaign: ReturnType<typeof spec>,
  options: { abortAfterMs?: number; settleGraceMs?: number; embedder?: RunShardOptions['embedder'] } = {},
) {
  const records: RequestRecord[] = [];
  const windows: WindowSnapshot[] = [];
  const controller = new AbortController();
  if (options.abortAfterMs !== undefined) setTimeout(() => controller.abort(), options.abortAfterMs);
  const result = runShard({
    spec: campaign,
    shard: { index: 0, count: 1 },
    runId: 'run-s',
    campaignId: 'camp-s',
    generatorId: 'gen-s',
    sink: { record: (r) => records.push(r), window: (w) => windows.push(w) },
    signal: controller.signal,
    settleGraceMs: options.settleGraceMs,
    embedder: options.embedder,
  });
  return { result, records, windows };
}

describe('runShard with a driver that never ends a request or its set-up', () => {
  it('ends them itself as timeouts a grace after their deadline, and the shard ends', async () => {
    driver = new HalfHangingDriver(true);
    const started = performance.now();
    const run = runOne(spec({}), { settleGraceMs: 300 });
    const { records, windows } = run;
    const result = await run.result;
    const tookMs = performance.now() - started;
    expect(driver.closed).toBe(true);
    expect(result.sent).toBe(driver.calls);
    expect(result.completed + result.errors).toBe(result.sent);
    const merged = mergeWindows(windows);
    expect(merged.requests).toBe(result.sent);
    const hung = Math.ceil(driver.calls / 2);
    expect(result.errors).toBe(hung);
    expect(merged.errorClasses).toEqual({ timeout: hung });
    const forced = records.filter((r) => r.errorClass === 'timeout');
    expect(forced.length).toBeGreaterThan(0);
    expect(forced[0].errorMessage).toMatch(
      /no complete response within 100 ms; the driver had not ended the request 300 ms later/,
    );
    // Duration, then the last hung request's deadline and grace; the driver's close is not awaited forever.
    expect(tookMs).toBeLessThan(400 + 100 + 300 + 250 + 5_000 + 1_000);
  }, 15_000);

  it('ends them as aborted a grace after the run is aborted', async () => {
    driver = new HalfHangingDriver(false);
    const started = performance.now();
    const result = await runOne(spec({ durationMs: 10_000, requestTimeoutMs: 60_000 }), {
      abortAfterMs: 50,
      settleGraceMs: 200,
    }).result;
    expect(result.endReason).toBe('aborted');
    expect(result.completed + result.errors).toBe(result.sent);
    expect(result.errors).toBe(Math.ceil(driver.calls / 2));
    expect(performance.now() - started).toBeLessThan(50 + 200 + 250 + 1_000);
  }, 15_000);

  it('is not held up by a set-up that never ends when the run is aborted: nothing is sent', async () => {
    driver = new StuckPreparingDriver(false);
    const started = performance.now();
    const result = await runOne(spec({ durationMs: 10_000, requestTimeoutMs: 60_000 }), {
      abortAfterMs: 100,
    }).result;
    expect(result.endReason).toBe('aborted');
    expect(result.sent).toBe(0);
    expect(driver.calls).toBe(0);
    expect(driver.closed).toBe(true);
    expect(performance.now() - started).toBeLessThan(1_100);
  }, 15_000);
});

describe('runShard aborted while it probes prompts for adversarial variants', () => {
  it('ends the probe in flight at once instead of at its request timeout', async () => {
    // A target that accepts the probe and never answers.
    const sockets = new Set<Socket>();
    const server = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    driver = new HalfHangingDriver(false);
    const started = performance.now();
    try {
      const result = await runOne(
        CampaignSpecSchema.parse({
          name: 'probe abort',
          target: { baseUrl: `http://127.0.0.1:${port}/v1` },
          scenario: {
            type: 'chat',
            prompts: ['Say hello', 'Count to three'],
            maxTokens: 8,
            perturbation: { kind: 'adversarial-entropy' },
          },
          load: { concurrency: 2, durationMs: 10_000, requestTimeoutMs: 60_000 },
        }),
        {
          abortAfterMs: 150,
          embedder: {
            name: 'none',
            dimensions: 1,
            embed: async (texts) => texts.map(() => new Float32Array(1)),
          },
        },
      ).result;
      expect(result.endReason).toBe('aborted');
      expect(result.sent).toBe(0);
      expect(result.adversarial?.[0].reason).toMatch(/probe request failed/);
      expect(performance.now() - started).toBeLessThan(1_500);
    } finally {
      for (const socket of sockets) socket.destroy();
      server.close();
    }
  }, 15_000);
});
