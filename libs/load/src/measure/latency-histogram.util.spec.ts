import fc from 'fast-check';
import {
  addSparse,
  HISTOGRAM_MAX_US,
  binCountsMs,
  countsAtOrBelowUs,
  decodeHistogram,
  decodeSparseHistogram,
  encodeHistogram,
  newLatencyHistogram,
  quantilesFromHistogram,
  recordMs,
  tailQuantilesMs,
} from './latency-histogram.util';

const latencies = fc.array(fc.double({ min: 0.001, max: 600_000, noNaN: true }), {
  minLength: 1,
  maxLength: 300,
});

describe(recordMs.name, () => {
  it('leaves a histogram exactly as recordValue of the rounded, clamped microseconds does', () => {
    const ms = fc.oneof(
      fc.double({ min: -1, max: 4_000_000_000, noNaN: true }),
      // Around every power of two of microseconds, where the bucket changes.
      fc.tuple(fc.integer({ min: 0, max: 31 }), fc.integer({ min: -2, max: 2 })).map(([k, d]) => (2 ** k + d) / 1000),
    );
    fc.assert(
      fc.property(fc.array(ms, { minLength: 1, maxLength: 200 }), (values) => {
        const fast = newLatencyHistogram();
        const reference = newLatencyHistogram();
        for (const v of values) {
          recordMs(fast, v);
          const us = Math.round(v * 1000);
          reference.recordValue(Math.min(HISTOGRAM_MAX_US, Math.max(1, us)));
        }
        expect(fast.totalCount).toBe(reference.totalCount);
        expect(fast.maxValue).toBe(reference.maxValue);
        expect(fast.minNonZeroValue).toBe(reference.minNonZeroValue);
        expect(encodeHistogram(fast)).toBe(encodeHistogram(reference));
        expect(fast.getValueAtPercentile(50)).toBe(reference.getValueAtPercentile(50));
      }),
      { numRuns: 500 },
    );
  });
});

describe(tailQuantilesMs.name, () => {
  it('gives the same P50, P95, P99 and max as quantilesFromHistogram', () => {
    fc.assert(
      fc.property(latencies, (values) => {
        const h = newLatencyHistogram();
        for (const v of values) recordMs(h, v);
        const q = quantilesFromHistogram(h);
        expect(tailQuantilesMs(h)).toEqual({ p50: q.p50, p95: q.p95, p99: q.p99, max: q.max });
      }),
    );
  });

  it('has nothing to say of an empty histogram', () => {
    expect(tailQuantilesMs(newLatencyHistogram())).toEqual({ p50: null, p95: null, p99: null, max: null });
  });
});

describe(addSparse.name, () => {
  it('merges sparse histograms to the counts, quantiles, min and max of adding them decoded', () => {
    fc.assert(
      fc.property(fc.array(latencies, { minLength: 1, maxLength: 6 }), (windows) => {
        const encoded = windows.map((values) => {
          const h = newLatencyHistogram();
          for (const v of values) recordMs(h, v);
          return encodeHistogram(h);
        });
        const added = newLatencyHistogram();
        for (const e of encoded) added.add(decodeHistogram(e));
        const sut = newLatencyHistogram();

        addSparse(sut, encoded.map(decodeSparseHistogram));

        expect(quantilesFromHistogram(sut, [90, 99.9])).toEqual(quantilesFromHistogram(added, [90, 99.9]));
        expect([sut.totalCount, sut.minNonZeroValue, sut.maxValue]).toEqual([
          added.totalCount,
          added.minNonZeroValue,
          added.maxValue,
        ]);
      }),
    );
  });

  it('keeps only the non-empty buckets: kilobytes, not the 92 KB counts array', () => {
    const h = newLatencyHistogram();
    for (let i = 0; i < 300; i++) recordMs(h, 50 + i * 3.7);

    const sut = decodeSparseHistogram(encodeHistogram(h));

    expect(sut.indexes.byteLength + sut.counts.byteLength).toBeLessThan(4096);
    expect(sut.counts.reduce((n, c) => n + c, 0)).toBe(300);
  });
});

describe(binCountsMs.name, () => {
  it('puts every recorded value in exactly one bin', () => {
    fc.assert(
      fc.property(latencies, (values) => {
        const h = newLatencyHistogram();
        for (const v of values) recordMs(h, v);
        const counts = binCountsMs(h, [1, 10, 100, 1000]);
        expect(counts.reduce((a, b) => a + b, 0)).toBe(values.length);
        // Below the first edge counts in the first bin, at or above the last in the last.
        expect(counts[0]).toBeGreaterThanOrEqual(values.filter((v) => v < 9.99).length);
        expect(counts[2]).toBeGreaterThanOrEqual(values.filter((v) => v >= 100.1).length);
      }),
    );
  });
});

describe(countsAtOrBelowUs.name, () => {
  it('counts the values at or below each bound, as a Prometheus histogram does', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 2047 }), { maxLength: 200 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 3000 }), { minLength: 1, maxLength: 12 }),
        (valuesUs, bounds) => {
          const boundsUs = [...bounds].sort((a, b) => a - b);
          const histogram = newLatencyHistogram();
          for (const v of valuesUs) histogram.recordValue(v);
          // Values below 2048 us are exact at 3 significant digits: the counts must be too.
          const expected = boundsUs.map((b) => valuesUs.filter((v) => v <= b).length);
          const decoded = decodeHistogram(encodeHistogram(histogram));
          const { counts, sumUs } = countsAtOrBelowUs(decoded, boundsUs);
          expect(counts).toEqual(expected);
          expect(sumUs).toBeCloseTo(decoded.mean * decoded.totalCount, 6);
        },
      ),
    );
  });

  it('keeps large values within HDR precision', () => {
    const histogram = newLatencyHistogram();
    histogram.recordValueWithCount(1_500_000, 3); // 1.5 s
    histogram.recordValueWithCount(30_000, 2); // 30 ms
    expect(countsAtOrBelowUs(histogram, [25_000, 100_000, 1_000_000, 2_500_000]).counts).toEqual([
      0, 2, 2, 5,
    ]);
  });
});
