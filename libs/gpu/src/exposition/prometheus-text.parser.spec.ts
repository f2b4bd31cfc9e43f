import fc from 'fast-check';
import { histogramQuantile, histogramSeries } from './histogram.util';
import {
  parsePrometheusText,
  PrometheusParseError,
  type PromFamily,
  type PromSample,
} from './prometheus-text.parser';
import { renderPrometheusText } from './prometheus-text.renderer';

describe(parsePrometheusText.name, () => {
  it('parses HELP, TYPE, labels, timestamps and special floats', () => {
    const sut = parsePrometheusText(
      [
        '# HELP http_requests_total The total number of HTTP requests.',
        '# TYPE http_requests_total counter',
        'http_requests_total{method="post",code="200"} 1027 1395066363000',
        'http_requests_total{method="post",code="400"}    3 1395066363000',
        '',
        'msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",error="Cannot find file:\\n\\"FILE.TXT\\""} 1.458255915e9',
        'metric_without_timestamp_and_labels 12.47',
        'something_weird{problem="division by zero"} +Inf -3982045',
        'nan_metric NaN',
        'neg_inf -Inf',
      ].join('\n'),
    );
    const http = sut.find((f) => f.name === 'http_requests_total');
    expect(http?.type).toBe('counter');
    expect(http?.help).toBe('The total number of HTTP requests.');
    expect(http?.samples[0]).toEqual({
      name: 'http_requests_total',
      labels: { method: 'post', code: '200' },
      value: 1027,
      timestampMs: 1395066363000,
    });
    const msdos = sut.find((f) => f.name === 'msdos_file_access_time_seconds')?.samples[0];
    expect(msdos?.labels).toEqual({ path: 'C:\\DIR\\FILE.TXT', error: 'Cannot find file:\n"FILE.TXT"' });
    expect(msdos?.value).toBe(1458255915);
    expect(sut.find((f) => f.name === 'something_weird')?.samples[0]).toMatchObject({
      value: Infinity,
      timestampMs: -3982045,
    });
    expect(sut.find((f) => f.name === 'nan_metric')?.samples[0].value).toBeNaN();
    expect(sut.find((f) => f.name === 'neg_inf')?.samples[0].value).toBe(-Infinity);
    expect(sut.find((f) => f.name === 'metric_without_timestamp_and_labels')?.type).toBe('untyped');
  });

  it('groups histogram and summary suffixes into their family', () => {
    const sut = parsePrometheusText(
      [
        '# TYPE rpc_duration_seconds summary',
        'rpc_duration_seconds{quantile="0.5"} 4773',
        'rpc_duration_seconds_sum 1.7560473e+07',
        'rpc_duration_seconds_count 2693',
        '# TYPE http_request_duration_seconds histogram',
        'http_request_duration_seconds_bucket{le="0.05"} 24054',
        'http_request_duration_seconds_bucket{le="0.1"} 33444',
        'http_request_duration_seconds_bucket{le="+Inf"} 144320',
        'http_request_duration_seconds_sum 53423',
        'http_request_duration_seconds_count 144320',
      ].join('\n'),
    );
    expect(sut.map((f) => [f.name, f.type, f.samples.length])).toEqual([
      ['rpc_duration_seconds', 'summary', 3],
      ['http_request_duration_seconds', 'histogram', 5],
    ]);
    const [series] = histogramSeries(sut[1]);
    expect(series.count).toBe(144320);
    expect(series.buckets.map((b) => b.le)).toEqual([0.05, 0.1, Infinity]);
  });

  it('accepts OpenMetrics extras: # EOF, _created, exemplars, float-second timestamps, quoted names', () => {
    const sut = parsePrometheusText(
      [
        '# TYPE foo counter',
        '# UNIT foo seconds',
        'foo_total{a="b"} 17.0 1520879607.789 # {trace_id="KOO5S4vxi0o"} 0.67',
        'foo_created{a="b"} 1520430000.123',
        '{"my.dotted.metric","le.vel"="x",} 3',
        '# EOF',
      ].join('\n'),
    );
    expect(sut[0].samples.map((s) => s.name)).toEqual(['foo_total', 'foo_created']);
    expect(sut[0].samples[0].timestampMs).toBe(1520879607789);
    expect(sut[1]).toMatchObject({
      name: 'my.dotted.metric',
      samples: [{ labels: { 'le.vel': 'x' }, value: 3 }],
    });
  });

  it.each([
    ['<html><body>502 Bad Gateway</body></html>'],
    ['metric{a="b" 1'],
    ['metric{a=b} 1'],
    ['metric not-a-number'],
    ['metric{a="1",a="2"} 1'],
    ['metric 1 2 3'],
    ['{"a":1}'],
  ])('rejects garbage %j with a line number', (text) => {
    expect(() => parsePrometheusText(text)).toThrow(PrometheusParseError);
  });
});

describe(histogramQuantile.name, () => {
  it('interpolates like PromQL histogram_quantile', () => {
    const buckets = [
      { le: 0.1, count: 50 },
      { le: 0.2, count: 100 },
      { le: Infinity, count: 100 },
    ];
    expect(histogramQuantile(0.5, buckets)).toBeCloseTo(0.1);
    expect(histogramQuantile(0.75, buckets)).toBeCloseTo(0.15);
    expect(histogramQuantile(0.25, buckets)).toBeCloseTo(0.05);
  });

  it('returns undefined without a +Inf bucket or observations', () => {
    expect(histogramQuantile(0.5, [{ le: 1, count: 3 }])).toBeUndefined();
    expect(histogramQuantile(0.5, [{ le: Infinity, count: 0 }])).toBeUndefined();
  });
});

// ---- property tests --------------------------------------------------------------------------

const labelName = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,8}$/).filter((n) => !n.startsWith('__'));
const labelValue = fc.string({
  unit: fc.oneof(
    fc.constantFrom('\\', '"', '\n', ' ', ',', '}', '{', '=', '#'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    fc.constantFrom('é', '中', '🚀'),
  ),
  maxLength: 12,
});
const value = fc.oneof(
  fc.double({ noNaN: false }),
  fc.integer().map((n) => n),
  fc.constantFrom(Infinity, -Infinity, NaN, 0, -0.5),
);
const labels = fc.dictionary(labelName, labelValue, { maxKeys: 5 });
const timestamp = fc.option(fc.integer({ min: -1e12, max: 4e12 }), { nil: undefined });
const helpText = fc.option(fc.string({ maxLength: 20 }), { nil: undefined });

const families = fc
  .array(
    fc.record({
      type: fc.constantFrom('gauge', 'untyped', 'counter') as fc.Arbitrary<'gauge' | 'untyped' | 'counter'>,
      help: helpText,
      samples: fc.array(fc.record({ labels, value, timestampMs: timestamp }), { minLength: 1, maxLength: 4 }),
    }),
    { minLength: 1, maxLength: 5 },
  )
  .map((list) =>
    list.map((f, i): PromFamily => {
      // Unique names that no suffix rule can confuse.
      const name = `m${i}_x`;
      const samples: PromSample[] = f.samples.map((s) =>
        s.timestampMs === undefined
          ? { name, labels: s.labels, value: s.value }
          : { name, labels: s.labels, value: s.value, timestampMs: s.timestampMs },
      );
      return f.help === undefined
        ? { name, type: f.type, samples }
        : { name, type: f.type, help: f.help.replace(/\r/g, '').trim(), samples };
    }),
  );

function normalise(list: PromFamily[]): unknown {
  // -0 renders as "0"; compare numbers by value.
  return list.map((f) => ({
    ...f,
    samples: f.samples.map((s) => ({ ...s, value: Object.is(s.value, -0) ? 0 : s.value })),
  }));
}

describe('Prometheus text properties', () => {
  it('render -> parse is the identity', () => {
    fc.assert(
      fc.property(families, (list) => {
        expect(normalise(parsePrometheusText(renderPrometheusText(list)))).toEqual(normalise(list));
      }),
      { numRuns: 300 },
    );
  });

  it('label order does not matter', () => {
    fc.assert(
      fc.property(labels, value, fc.integer({ min: 0, max: 1000 }), (labelSet, v, seed) => {
        const entries = Object.entries(labelSet);
        const shuffled = [...entries].sort(
          (a, b) => ((a[0].charCodeAt(0) * 31 + seed) % 7) - ((b[0].charCodeAt(0) * 31 + seed) % 7),
        );
        const render = (e: [string, string][]) =>
          renderPrometheusText([
            { name: 'x', type: 'gauge', samples: [{ name: 'x', labels: Object.fromEntries(e), value: v }] },
          ]);
        expect(parsePrometheusText(render(entries))[0].samples[0].labels).toEqual(
          parsePrometheusText(render(shuffled))[0].samples[0].labels,
        );
      }),
      { numRuns: 200 },
    );
  });

  it('any label value survives escaping', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 30 }), (raw) => {
        const text = renderPrometheusText([
          { name: 'x', type: 'gauge', samples: [{ name: 'x', labels: { v: raw }, value: 1 }] },
        ]);
        expect(parsePrometheusText(text)[0].samples[0].labels['v']).toBe(raw);
      }),
      { numRuns: 300 },
    );
  });

  it('histograms round-trip with their buckets grouped', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 1000 }), { minLength: 1, maxLength: 6 }),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        (increments, sum) => {
          let cumulative = 0;
          const bounds = increments.map((_, i) => (i + 1) * 0.5);
          const samples: PromSample[] = increments.map((inc, i) => {
            cumulative += inc;
            return { name: 'lat_bucket', labels: { le: String(bounds[i]) }, value: cumulative };
          });
          samples.push({ name: 'lat_bucket', labels: { le: '+Inf' }, value: cumulative });
          samples.push(
            { name: 'lat_sum', labels: {}, value: sum },
            { name: 'lat_count', labels: {}, value: cumulative },
          );
          const parsed = parsePrometheusText(
            renderPrometheusText([{ name: 'lat', type: 'histogram', samples }]),
          );
          expect(parsed).toHaveLength(1);
          const [series] = histogramSeries(parsed[0]);
          expect(series.count).toBe(cumulative);
          expect(series.buckets.at(-1)).toEqual({ le: Infinity, count: cumulative });
          const p50 = histogramQuantile(0.5, series.buckets);
          if (cumulative > 0) expect(p50).toBeLessThanOrEqual(bounds.at(-1) as number);
        },
      ),
      { numRuns: 200 },
    );
  });
});
