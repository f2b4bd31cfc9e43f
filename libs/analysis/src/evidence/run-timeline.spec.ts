import { envelope, type TelemetryWindow } from '@fathom/contracts';
import { decodeHistogram, encodeHistogram, mergeWindows } from '@fathom/load';
import { RunTimeline } from './run-timeline';
import type { RecordDigest } from './record-digest';

const EMPTY = mergeWindows([]).histogramsUs.e2e;

function windowAt(seq: number, e2eMs: number): TelemetryWindow {
  const h = decodeHistogram(EMPTY);
  h.recordValueWithCount(Math.round(e2eMs * 1000), 10);
  const e2e = encodeHistogram(h);
  return {
    ...envelope('c', 'r', 1_000_000 + seq * 1000),
    generatorId: 'g',
    shard: 0,
    windowStart: 1_000_000 + seq * 1000,
    windowMs: 1000,
    seq,
    requests: 10,
    errors: 0,
    errorClasses: {},
    dropped: 0,
    late: 0,
    inputTokens: 0,
    outputTokens: 0,
    histogramsUs: { e2e, correctedE2e: e2e, ttft: EMPTY, itl: EMPTY },
  };
}

const digestAt = (at: number) =>
  ({ at, startedAt: at - 10, e2eMs: 10, calls: [] }) as unknown as RecordDigest;

describe(RunTimeline.name, () => {
  it('holds a window decoded in a few KB, not a 92 KB histogram each', () => {
    const sut = new RunTimeline();
    for (let seq = 0; seq < 100; seq++) sut.addWindow(windowAt(seq, 100 + seq));

    const latency = sut.span(Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY).latency;
    void [latency.e2e, latency.correctedE2e, latency.ttft, latency.itl, latency.tpot];

    // 100 windows x 5 histograms decoded; dense, that was 46 MB.
    expect(sut.decodedHistogramBytes).toBeLessThan(100 * 5 * 1024);
    expect(latency.e2e.max).toBeCloseTo(199, 0);
  });

  it('forgets the middle of a long run, keeping its head, its recent past and its start', () => {
    const sut = new RunTimeline();
    const whole = new RunTimeline();
    for (let seq = 0; seq < 600; seq++) {
      const w = windowAt(seq, seq < 300 ? 100 : 900);
      sut.addWindow(w);
      whole.addWindow(w);
      sut.addDigests([digestAt(w.windowStart + 500)]);
    }
    const start = 1_000_000;

    sut.prune(start + 5_000, start + 400_000);

    expect(sut.windows).toHaveLength(5 + 200);
    expect(sut.digests).toHaveLength(5 + 200);
    expect(sut.startMs).toBe(whole.startMs);
    const recent = [start + 450_000, start + 600_000] as const;
    expect(sut.span(...recent).requests).toBe(whole.span(...recent).requests);
    expect(sut.span(...recent).latency.e2e).toEqual(whole.span(...recent).latency.e2e);
    const head = [start, start + 5_000] as const;
    expect(sut.span(...head).latency.e2e).toEqual(whole.span(...head).latency.e2e);
  });
});
