import { startSimTarget, type SimTarget } from '@fathom/sim';
import { Topics, type BreakerChange, type RequestRecord } from '@fathom/contracts';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

/**
 * The breaker loop through all five services: the target fails every call for 2 s, the analyzer
 * opens the breaker, the load-generator stops sending on its path while it is open (no load is
 * thrown at a target that is down), the breaker half-opens on its own after `openMs` (windows keep
 * coming while nothing is sent), the probes pass against the recovered target, it closes, and the
 * load resumes.
 */
describe('breaker gate through the embedded services', () => {
  jest.setTimeout(60_000);
  let sut: EmbeddedFathom;
  let sim: SimTarget;
  const breakers: { at: number; event: BreakerChange }[] = [];
  const records: RequestRecord[] = [];

  beforeAll(async () => {
    sut = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.1 } });
    await sut.bus.subscribe(Topics.breaker, { group: 'test-breakers' }, async (event) => {
      breakers.push({ at: Date.now(), event });
    });
    await sut.bus.subscribe(Topics.requestTelemetry, { group: 'test-records' }, async (event) => {
      records.push(...event.records);
    });
  });

  afterAll(async () => {
    await sut?.close();
    await sim?.close();
  });

  it('stops the load while the breaker is open and resumes it once the probes pass', async () => {
    const { runId } = await sut.campaigns.submit(
      {
        name: 'breaker gate',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'chat', prompts: ['hello'], maxTokens: 8 },
        load: {
          concurrency: 4,
          durationMs: 12_000,
          profile: { type: 'constant-rate', seed: 1, ratePerSec: 20 },
        },
        reruns: { maxReruns: 0, cooldownMs: 0 },
      } as never,
      'api',
    );
    for (;;) {
      const run = await sut.runs.get(runId);
      if (run && run.status !== 'pending') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 1_500));
    sim.faults.set({ kind: 'http_5xx', rate: 1, durationMs: 2_000 });
    await waitForRun(sut.runs, runId, { timeoutMs: 40_000 });

    const ofRun = breakers.filter((b) => b.event.runId === runId);
    const opened = ofRun.find((b) => b.event.to === 'open');
    const halfOpen = ofRun.find((b) => b.event.to === 'half-open' && opened && b.at >= opened.at);
    const closed = ofRun.find((b) => b.event.to === 'closed' && halfOpen && b.at >= halfOpen.at);
    if (!opened || !halfOpen || !closed)
      throw new Error(`breaker events: ${JSON.stringify(ofRun.map((b) => [b.event.from, b.event.to]))}`);
    const started = records.filter((r) => r.requestId.startsWith(runId)).map((r) => r.startedAt);
    // Open: nothing sent (200 ms for the change to reach the engine); half-open lets the probes
    // through and closed brings the load back.
    expect(started.filter((t) => t > opened.at + 200 && t < halfOpen.at)).toEqual([]);
    expect(started.some((t) => t > closed.at)).toBe(true);
  });
});
