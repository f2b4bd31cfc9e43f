import fc from 'fast-check';
import { WindowRecorder } from './window.recorder';
import { mergeWindows } from './window.snapshot';
import {
  encodeHistogram,
  newLatencyHistogram,
  quantilesFromHistogram,
  recordMs,
} from './latency-histogram.util';

const sample = (e2eMs: number) => ({
  e2eMs,
  correctedE2eMs: e2eMs + 1,
  ttftMs: e2eMs / 2,
  tpotMs: e2eMs / 4,
  chunkOffsetsMs: [e2eMs / 2, e2eMs],
  errorClass: null,
  inputTokens: 3,
  outputTokens: 2,
});

describe(mergeWindows.name, () => {
  it('merges windows of several generators exactly: same quantiles as one histogram of all values', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.double({ min: 0.01, max: 60000, noNaN: true }), { maxLength: 50 }), {
          minLength: 1,
          maxLength: 5,
        }),
        (perGenerator) => {
          const windows = perGenerator.map((values, shard) => {
            const recorder = new WindowRecorder(shard, 1000);
            values.forEach((v) => recorder.observe(sample(v)));
            return recorder.flush(0);
          });
          const all = newLatencyHistogram();
          perGenerator.flat().forEach((v) => recordMs(all, v));
          const sut = mergeWindows(windows);
          expect(sut.requests).toBe(perGenerator.flat().length);
          // Compared as encoded: a live histogram's max is the raw value, a decoded one's its bucket's top.
          expect(sut.quantiles.e2e).toEqual(quantilesFromHistogram(encodeHistogram(all)));
          expect(sut.quantiles.itl.count).toBe(perGenerator.flat().length);
          // A merge is itself mergeable.
          expect(mergeWindows([{ ...sut, histogramsUs: sut.histogramsUs }]).quantiles.e2e).toEqual(
            sut.quantiles.e2e,
          );
        },
      ),
      { numRuns: 50 },
    );
  });

  it('adds error classes, dropped and late, and keeps errors out of the latency histograms', () => {
    const a = new WindowRecorder(0, 1000);
    a.observe({ ...sample(10), errorClass: 'timeout' });
    a.observe(sample(20));
    a.countDropped(2);
    a.countLate();
    const b = new WindowRecorder(1, 1000);
    b.observe({ ...sample(10), errorClass: 'timeout' });
    b.observe({ ...sample(10), errorClass: 'http-5xx' });
    const sut = mergeWindows([a.flush(0), b.flush(0)]);
    expect(sut).toMatchObject({
      requests: 4,
      errors: 3,
      dropped: 2,
      late: 1,
      errorClasses: { timeout: 2, 'http-5xx': 1 },
    });
    expect(sut.quantiles.e2e.count).toBe(1);
    expect(sut.quantiles.e2e.p99).toBeCloseTo(20, 1);
  });

  it('merges TPOT like the other histograms, and a window without one (older generator) as empty', () => {
    const recorder = new WindowRecorder(0, 1000);
    [8, 12, 40].forEach((v) => recorder.observe(sample(v)));
    const withTpot = recorder.flush(0);
    recorder.observe(sample(400));
    const older = recorder.flush(1000);
    const withoutTpot: Partial<typeof older.histogramsUs> = { ...older.histogramsUs };
    delete withoutTpot.tpot;
    const sut = mergeWindows([
      withTpot,
      { ...older, histogramsUs: withoutTpot as typeof older.histogramsUs },
    ]);
    expect(sut.quantiles.tpot.count).toBe(3);
    expect(sut.quantiles.tpot.max).toBeCloseTo(10, 1);
    expect(sut.quantiles.e2e.count).toBe(4);
  });

  it('reads the asked percentiles from the merged histogram', () => {
    const recorder = new WindowRecorder(0, 1000);
    for (let v = 1; v <= 1000; v++) recorder.observe(sample(v));
    const merged = mergeWindows([recorder.flush(0)]);
    const q = quantilesFromHistogram(merged.histograms.e2e, [90, 99.9]);
    expect(q.percentiles?.p90).toBeCloseTo(900, -1);
    expect(q.percentiles?.['p99.9']).toBeCloseTo(999, -1);
    expect(quantilesFromHistogram(newLatencyHistogram(), [90]).percentiles).toEqual({ p90: null });
  });

  it('starts each window empty with the next sequence number', () => {
    const sut = new WindowRecorder(0, 1000);
    sut.observe(sample(5));
    expect(sut.flush(0).seq).toBe(0);
    const second = sut.flush(1000);
    expect(second.seq).toBe(1);
    expect(mergeWindows([second]).quantiles.e2e.count).toBe(0);
    expect(mergeWindows([]).quantiles.e2e).toEqual({
      count: 0,
      mean: null,
      p50: null,
      p95: null,
      p99: null,
      max: null,
    });
  });
});
