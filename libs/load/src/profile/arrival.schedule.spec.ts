import {
  constantRateSchedule,
  gammaSchedule,
  poissonSchedule,
  rampingRateSchedule,
  replaySchedule,
  type ArrivalSchedule,
} from './arrival.schedule';
import { parseReplayOtel, extractIntentPaths } from './replay.loader';

function drain(schedule: ArrivalSchedule): number[] {
  const out: number[] = [];
  for (let a = schedule.next(); a !== null; a = schedule.next()) out.push(a.atMs);
  return out;
}

describe(constantRateSchedule.name, () => {
  it('spaces arrivals evenly and the shards together make the campaign stream exactly', () => {
    const whole = drain(constantRateSchedule(100, 1000, { index: 0, count: 1 }));
    expect(whole).toHaveLength(100);
    expect(whole[1] - whole[0]).toBeCloseTo(10);
    const parts = [0, 1, 2].map((index) => drain(constantRateSchedule(100, 1000, { index, count: 3 })));
    expect(parts.map((p) => p.length)).toEqual([34, 33, 33]);
    expect(parts.flat().sort((a, b) => a - b)).toEqual(whole);
  });
});

describe(poissonSchedule.name, () => {
  it('is reproducible for a seed and has the asked mean rate', () => {
    const a = drain(poissonSchedule(500, 20000, { index: 0, count: 1 }, 7));
    expect(drain(poissonSchedule(500, 20000, { index: 0, count: 1 }, 7))).toEqual(a);
    expect(drain(poissonSchedule(500, 20000, { index: 0, count: 1 }, 8))).not.toEqual(a);
    expect(a.length).toBeGreaterThan(9700);
    expect(a.length).toBeLessThan(10300);
    const gaps = a.slice(1).map((t, i) => t - a[i]);
    const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length;
    const sd = Math.sqrt(gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / gaps.length);
    expect(sd / mean).toBeGreaterThan(0.9); // exponential gaps: coefficient of variation 1
    expect(sd / mean).toBeLessThan(1.1);
  });

  it('gives each shard rate/n', () => {
    const parts = [0, 1].map((index) => drain(poissonSchedule(400, 10000, { index, count: 2 }, 1)).length);
    for (const n of parts) expect(Math.abs(n - 2000)).toBeLessThan(150);
  });
});

describe(rampingRateSchedule.name, () => {
  it('sends the integral of the rate in each stage and holds the last rate', () => {
    const sut = drain(
      rampingRateSchedule(0, [{ durationMs: 2000, targetRatePerSec: 100 }], 3000, { index: 0, count: 1 }),
    );
    const inRamp = sut.filter((t) => t < 2000).length;
    expect(Math.abs(inRamp - 100)).toBeLessThanOrEqual(1); // (0 + 100) / 2 x 2 s
    expect(sut.filter((t) => t >= 2000).length).toBe(100); // 100/s held for 1 s
    const firstHalf = sut.filter((t) => t < 1000).length;
    expect(Math.abs(firstHalf - 25)).toBeLessThanOrEqual(1); // quadratic: a quarter of the ramp
  });
});

describe(replaySchedule.name, () => {
  it('replays recorded offsets scaled by speed, round-robin over shards', () => {
    const arrivals = [0, 100, 200, 300].map((offsetMs) => ({ offsetMs, prompt: `p${offsetMs}` }));
    expect(drain(replaySchedule(arrivals, 2, 1000, { index: 1, count: 2 }))).toEqual([50, 150]);
  });

  it('takes root spans of an OTLP export as arrivals and intent paths with weights', () => {
    const span = (traceId: string, spanId: string, name: string, start: number, parent?: string) => ({
      traceId,
      spanId,
      name,
      startTimeUnixNano: String(start * 1e6),
      ...(parent ? { parentSpanId: parent } : {}),
    });
    const otlp = JSON.stringify({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                span('t1', 'a', 'session', 1000),
                span('t1', 'b', 'doc-qa', 1001, 'a'),
                span('t1', 'c', 'chart', 1002, 'a'),
                span('t2', 'd', 'session', 1500),
                span('t2', 'e', 'doc-qa', 1501, 'd'),
                span('t2', 'f', 'chart', 1502, 'd'),
                span('t3', 'g', 'session', 1800),
                span('t3', 'h', 'summary', 1801, 'g'),
              ],
            },
          ],
        },
      ],
    });
    expect(parseReplayOtel(otlp, 'x.json').map((a) => a.offsetMs)).toEqual([0, 500, 800]);
    const paths = extractIntentPaths(otlp, 'x.json');
    expect(paths[0]).toEqual({ path: ['doc-qa', 'chart'], weight: 2 / 3 });
    expect(paths[1]).toEqual({ path: ['summary'], weight: 1 / 3 });
  });
});

describe(gammaSchedule.name, () => {
  const gapsOf = (times: number[]) => times.slice(1).map((t, i) => t - times[i]);
  const cv = (gaps: number[]) => {
    const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length;
    return Math.sqrt(gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / gaps.length) / mean;
  };

  it('keeps the asked rate whatever the burstiness; the gaps vary as 1/sqrt(burstiness) (vllm bench --burstiness)', () => {
    for (const burstiness of [0.25, 1, 4]) {
      const times = drain(gammaSchedule(200, burstiness, 50_000, { index: 0, count: 1 }, 3));
      expect(times.length).toBeGreaterThan(9400);
      expect(times.length).toBeLessThan(10600);
      // A gamma of shape k has a coefficient of variation 1/sqrt(k): 2, 1 (Poisson), 0.5.
      expect(cv(gapsOf(times))).toBeCloseTo(1 / Math.sqrt(burstiness), 1);
    }
  });

  it('is reproducible for a seed, and the shards together make the campaign stream exactly', () => {
    const whole = drain(gammaSchedule(100, 0.5, 5000, { index: 0, count: 1 }, 9));
    expect(drain(gammaSchedule(100, 0.5, 5000, { index: 0, count: 1 }, 9))).toEqual(whole);
    expect(drain(gammaSchedule(100, 0.5, 5000, { index: 0, count: 1 }, 10))).not.toEqual(whole);
    const parts = [0, 1, 2].map((index) => drain(gammaSchedule(100, 0.5, 5000, { index, count: 3 }, 9)));
    expect(parts.flat().sort((a, b) => a - b)).toEqual(whole);
  });
});
