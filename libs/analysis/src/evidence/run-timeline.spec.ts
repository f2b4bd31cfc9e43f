import { Detectors, envelope, type DetectorSignal, type TelemetryWindow } from '@fathom/contracts';
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

/** A detector signal emitted at `at`; its message names it. */
const signal = (at: number, detector: string, message = `${detector}@${at}`): DetectorSignal => ({
  ...envelope('c', 'r', at),
  kind: 'detector',
  detector,
  requestId: null,
  severity: 'warning',
  message,
  figures: {},
});

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

  it('gives a span the detector signals emitted in (from, to], however they arrived', () => {
    const sut = new RunTimeline();
    // Mostly in order, one late arrival, two at the same time in the order they came.
    for (const [at, name] of [
      [100, 'a'],
      [200, 'b'],
      [300, 'c'],
      [250, 'late'],
      [300, 'd'],
      [400, 'e'],
    ] as const)
      sut.addDetector(signal(at, name));
    expect(sut.span(200, 300).detectors.map((s) => s.detector)).toEqual(['late', 'c', 'd']);
    expect(sut.span(0, 100).detectors.map((s) => s.detector)).toEqual(['a']);
    expect(sut.span(400, 500).detectors).toEqual([]);
    expect(sut.detectors.map((s) => s.detector)).toEqual(['a', 'b', 'late', 'c', 'd', 'e']);
    sut.addDetector(signal(50, 'earliest'));
    expect(sut.span(0, 100).detectors.map((s) => s.detector)).toEqual(['earliest', 'a']);
  });

  it("gives one detector's signals oldest first, and when the newest of all was emitted", () => {
    const sut = new RunTimeline();
    expect(sut.detectorsOf('drift')).toEqual([]);
    expect(sut.latestDetectorMs).toBeNull();
    sut.addDetector(signal(300, 'drift', 'd300'));
    sut.addDetector(signal(500, 'anomaly', 'a500'));
    sut.addDetector(signal(100, 'drift', 'd100'));
    sut.addDetector(signal(400, 'drift', 'd400'));
    expect(sut.detectorsOf('drift').map((s) => s.message)).toEqual(['d100', 'd300', 'd400']);
    expect(sut.detectorsOf('anomaly').map((s) => s.message)).toEqual(['a500']);
    expect(sut.latestDetectorMs).toBe(500);
    expect(sut.detectors).toHaveLength(4);
  });

  it("forgets per-response detector signals in a long run's middle, keeps run-wide findings and the head", () => {
    const sut = new RunTimeline();
    for (let at = 1000; at <= 600_000; at += 1000) {
      sut.addDetector(signal(at, Detectors.semanticAnomaly));
      sut.addDetector(signal(at, Detectors.hallucinationRisk));
    }
    sut.addDetector(signal(100_000, Detectors.schemaDrift));
    sut.addDetector(signal(150_000, Detectors.ragMismatch));

    sut.prune(5_000, 400_000);

    // Head (<= 5 s) and recent past (> 400 s): 5 + 200 of each per-response detector.
    expect(sut.detectorsOf(Detectors.semanticAnomaly)).toHaveLength(205);
    expect(sut.detectorsOf(Detectors.hallucinationRisk)).toHaveLength(205);
    expect(sut.detectorsOf(Detectors.schemaDrift)).toHaveLength(1);
    expect(sut.detectorsOf(Detectors.ragMismatch)).toHaveLength(1);
    expect(sut.detectors).toHaveLength(412);
    expect(sut.span(0, 5_000).detectors).toHaveLength(10);
    expect(sut.span(5_000, 400_000).detectors.map((s) => s.detector)).toEqual([
      Detectors.schemaDrift,
      Detectors.ragMismatch,
    ]);
    expect(sut.span(590_000, 600_000).detectors).toHaveLength(20);
  });
});
