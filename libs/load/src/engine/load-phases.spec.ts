import { CampaignSpecSchema, type CampaignSpecInput, type RequestRecord } from '@fathom/contracts';
import { startLocalOpenAi } from '../__fixtures__/local-openai.server';
import { mergeWindows, type WindowSnapshot } from '../measure/window.snapshot';
import { runShard } from './run-shard';

function spec(url: string, load: Partial<CampaignSpecInput['load']>, slo: CampaignSpecInput['slo'] = {}) {
  return CampaignSpecSchema.parse({
    name: 'phases test',
    target: { baseUrl: url },
    scenario: { type: 'chat', prompts: ['hi'], stream: false },
    load: { concurrency: 8, durationMs: 1000, requestTimeoutMs: 3000, ...load },
    slo,
  });
}

async function run(url: string, load: Partial<CampaignSpecInput['load']>, slo?: CampaignSpecInput['slo']) {
  const records: RequestRecord[] = [];
  const windows: WindowSnapshot[] = [];
  const result = await runShard({
    spec: spec(url, load, slo),
    shard: { index: 0, count: 1 },
    runId: 'run-p',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: (r) => records.push(r), window: (w) => windows.push(w) },
    signal: new AbortController().signal,
  });
  return { result, records, windows };
}

const bySegment = (windows: WindowSnapshot[], segment: string) =>
  mergeWindows(windows.filter((w) => w.phase?.segment === segment));

describe('load phases: warm-up, cool-down, sweep steps, abortOnFail', () => {
  it('counts requests that started in the warm-up or cool-down apart, by their start, even when they end later', async () => {
    let t0 = 0;
    // Slow during its first 350 ms (a cold target; the engine's warm-up is 400 ms), quick after.
    const target = await startLocalOpenAi(() => {
      const now = performance.now();
      if (t0 === 0) t0 = now;
      return { kind: 'json', delayMs: now - t0 < 350 ? 150 : 3 };
    });
    try {
      const { result, records, windows } = await run(target.url, {
        durationMs: 1500,
        warmupMs: 400,
        cooldownMs: 300,
        profile: { type: 'constant-rate', ratePerSec: 50 },
      });
      const warmup = bySegment(windows, 'warmup');
      const measured = bySegment(windows, 'measured');
      const cooldown = bySegment(windows, 'cooldown');
      // 50/s: 20 arrivals in the warm-up, 40 measured, 15 in the cool-down.
      expect(warmup.requests).toBeGreaterThanOrEqual(18);
      expect(warmup.requests).toBeLessThanOrEqual(21);
      expect(cooldown.requests).toBeGreaterThanOrEqual(13);
      expect(cooldown.requests).toBeLessThanOrEqual(16);
      expect(warmup.requests + measured.requests + cooldown.requests).toBe(result.sent);
      // The slow warm-up requests (150 ms, ending well after 400 ms) stay out of the measured figures.
      expect(warmup.quantiles.e2e.p50!).toBeGreaterThan(100);
      // (The median: on a loaded machine a few quick requests can take 100 ms.)
      expect(measured.quantiles.e2e.p50!).toBeLessThan(100);
      // Records say the same, by their scheduled start.
      const first = Math.min(...records.map((r) => r.scheduledAt));
      for (const r of records) {
        const at = r.scheduledAt - first;
        const expected = at < 400 ? 'warmup' : at >= 1200 ? 'cooldown' : 'measured';
        // 20 ms slack for the clock of the schedule vs the first request's.
        if (Math.abs(at - 400) > 20 && Math.abs(at - 1200) > 20) expect(r.phase?.segment).toBe(expected);
      }
      // Segment lengths: each window says how long its segment has run.
      const length = (segment: string) =>
        Math.max(...windows.filter((w) => w.phase?.segment === segment).map((w) => w.phase!.elapsedMs));
      expect(length('warmup')).toBeGreaterThan(350);
      expect(length('warmup')).toBeLessThan(500);
      expect(length('measured')).toBeGreaterThan(700);
      expect(length('measured')).toBeLessThan(900);
      const seqs = windows.map((w) => w.seq);
      expect(new Set(seqs).size).toBe(seqs.length);
    } finally {
      await target.close();
    }
  });

  it('takes the first warmupRequests requests as the warm-up', async () => {
    const target = await startLocalOpenAi(() => ({ kind: 'json', delayMs: 2 }));
    try {
      const { records } = await run(target.url, { concurrency: 1, durationMs: 300, warmupRequests: 5 });
      const ordered = [...records].sort((a, b) => a.scheduledAt - b.scheduledAt);
      expect(ordered.slice(0, 5).every((r) => r.phase?.segment === 'warmup')).toBe(true);
      expect(ordered.slice(5).every((r) => r.phase?.segment === 'measured')).toBe(true);
      expect(ordered.length).toBeGreaterThan(10);
    } finally {
      await target.close();
    }
  });

  it('stops once the campaign SLO fails with abortOnFail, after its delay, and says why', async () => {
    const target = await startLocalOpenAi(() => ({ kind: 'json', delayMs: 40 }));
    try {
      const t0 = performance.now();
      const { result } = await run(
        target.url,
        { concurrency: 2, durationMs: 8000 },
        { p99Ms: 10, abortOnFail: { delayMs: 1000 } },
      );
      const tookMs = performance.now() - t0;
      expect(result.endReason).toBe('slo-failed');
      expect(result.endDetail).toMatch(/^P95 .* > 10 ms|P99 .* > 10 ms/);
      expect(tookMs).toBeGreaterThan(950);
      expect(tookMs).toBeLessThan(4000);
      const held = await run(
        target.url,
        { concurrency: 2, durationMs: 1200 },
        { p99Ms: 5000, abortOnFail: true },
      );
      expect(held.result.endReason).toBe('duration');
    } finally {
      await target.close();
    }
  });

  it('tags each sweep step: synchronous, throughput, then the rates, each with its own windows and records', async () => {
    const target = await startLocalOpenAi(() => ({ kind: 'json', delayMs: 10 }));
    try {
      const { result, records, windows } = await run(target.url, {
        durationMs: 2000,
        profile: { type: 'sweep', rates: 2 },
        // Every request a record (not the default record budget), so records match windows.
        recordSampleRate: 1,
      });
      const steps = new Map<number, WindowSnapshot[]>();
      for (const w of windows) steps.set(w.phase!.index, [...(steps.get(w.phase!.index) ?? []), w]);
      expect([...steps.keys()].sort()).toEqual([0, 1, 2, 3]);
      expect(steps.get(0)![0].phase).toMatchObject({ kind: 'synchronous', concurrency: 1 });
      expect(steps.get(1)![0].phase).toMatchObject({ kind: 'throughput', concurrency: 8 });
      expect(steps.get(2)![0].phase!.ratePerSec).toBeCloseTo(result.sweep!.rates[0]);
      expect(steps.get(3)![0].phase!.kind).toBe('rate');
      // Each step drained before the next: a step's windows count exactly its records.
      for (const [index, ws] of steps)
        expect(mergeWindows(ws).requests).toBe(records.filter((r) => r.phase?.index === index).length);
    } finally {
      await target.close();
    }
  });

  it('sweeps over concurrencies, one closed-model step per number of users', async () => {
    const target = await startLocalOpenAi(() => ({ kind: 'json', delayMs: 10 }));
    try {
      const { result, windows, records } = await run(target.url, {
        durationMs: 900,
        recordSampleRate: 1,
        profile: { type: 'sweep', concurrencies: [1, 4, 8] },
      });
      expect(result.sweep!.concurrencies).toEqual([1, 4, 8]);
      expect([0, 1, 2].map((i) => windows.find((w) => w.phase!.index === i)!.phase!.concurrency)).toEqual([
        1, 4, 8,
      ]);
      // What the target saw of each step: a request arriving at t is answered 10 ms later (a
      // timer: 9 ms and more by this clock), so the step's requests that arrived in (t - 8 ms, t]
      // were all in flight at t. One user's next request comes only after its answer: the most at
      // once is the step's number of users.
      // (Counted at the target, not by throughput: a stalled machine skews 300 ms of counts.)
      const stepOf = new Map(records.map((r) => [r.requestId, r.phase!.index]));
      const mostAtOnce = [0, 1, 2].map((i) => {
        const arrivals = target.received
          .filter((q) => stepOf.get(String(q.headers['x-fathom-request'])) === i)
          .map((q) => q.receivedMono);
        return Math.max(...arrivals.map((t) => arrivals.filter((u) => u > t - 8 && u <= t).length));
      });
      expect(mostAtOnce).toEqual([1, 4, 8]);
    } finally {
      await target.close();
    }
  });
});
