import { z } from 'zod';
import { Registry } from 'prom-client';
import { SpanStatusCode } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import {
  EDGE_REDUCED_ATTRIBUTE,
  EDGE_SAMPLING_DEFAULTS,
  EdgeSamplingSettingsShape,
  EdgeSamplingSpanProcessor,
  HostPressure,
  edgeSamplingOptions,
  osHostReadings,
  type HostReadings,
} from './edge-sampling';

const MiB = 1024 * 1024;

describe(HostPressure.name, () => {
  it('is short only when CPU is above 75 % and free memory below 128 MiB, both', () => {
    const cases: [HostReadings, boolean][] = [
      [{ cpuBusy: 0.9, freeMemoryBytes: 64 * MiB }, true],
      [{ cpuBusy: 0.9, freeMemoryBytes: 512 * MiB }, false],
      [{ cpuBusy: 0.5, freeMemoryBytes: 64 * MiB }, false],
      [{ cpuBusy: 0.75, freeMemoryBytes: 64 * MiB }, false],
      [{ cpuBusy: 0.76, freeMemoryBytes: 128 * MiB }, false],
    ];
    for (const [reading, short] of cases) expect(new HostPressure(() => reading).isShort()).toBe(short);
  });

  it('reads the host at most once per refresh interval and keeps its verdict through a failed reading', () => {
    let now = 0;
    let reads = 0;
    let reading: HostReadings | Error = { cpuBusy: 0.9, freeMemoryBytes: MiB };
    const sut = new HostPressure(
      () => {
        reads++;
        if (reading instanceof Error) throw reading;
        return reading;
      },
      EDGE_SAMPLING_DEFAULTS,
      () => now,
    );
    expect(sut.isShort()).toBe(true);
    reading = { cpuBusy: 0.1, freeMemoryBytes: 8192 * MiB };
    now = 999;
    expect(sut.isShort()).toBe(true);
    expect(reads).toBe(1);
    now = 1000;
    expect(sut.isShort()).toBe(false);
    reading = new Error('no /proc');
    now = 2000;
    expect(sut.isShort()).toBe(false);
    expect(reads).toBe(3);
  });

  it("reads this host's CPU share and free memory from os", () => {
    const read = osHostReadings();
    for (const r of [read(), read()]) {
      expect(r.cpuBusy).toBeGreaterThanOrEqual(0);
      expect(r.cpuBusy).toBeLessThanOrEqual(1);
      expect(r.freeMemoryBytes).toBeGreaterThan(0);
    }
  });
});

describe('edge sampling settings', () => {
  const parse = (env: Record<string, string>) => z.object(EdgeSamplingSettingsShape).parse(env);
  it("default to the spec's thresholds and take named overrides", () => {
    expect(edgeSamplingOptions(parse({}))).toMatchObject({
      cpuBusyAbove: 0.75,
      freeMemoryBelowBytes: 128 * MiB,
    });
    expect(
      edgeSamplingOptions(
        parse({ FATHOM_EDGE_CPU_BUSY_ABOVE: '0.5', FATHOM_EDGE_FREE_MEMORY_BELOW_MB: '1024' }),
      ),
    ).toMatchObject({ cpuBusyAbove: 0.5, freeMemoryBelowBytes: 1024 * MiB });
    expect(edgeSamplingOptions(parse({ FATHOM_EDGE_SAMPLING: 'off' }))).toBeNull();
  });
  it('refuse a CPU share above 1', () => {
    expect(() => parse({ FATHOM_EDGE_CPU_BUSY_ABOVE: '75' })).toThrow();
  });
});

describe(EdgeSamplingSpanProcessor.name, () => {
  it('exports spans started while the host is short as trace id and error flag only, and counts them', async () => {
    let reading: HostReadings = { cpuBusy: 0.2, freeMemoryBytes: 4096 * MiB };
    const exporter = new tracing.InMemorySpanExporter();
    const sut = new EdgeSamplingSpanProcessor(
      new tracing.SimpleSpanProcessor(exporter),
      new HostPressure(() => reading, { ...EDGE_SAMPLING_DEFAULTS, refreshMs: 0 }),
    );
    const registry = new Registry();
    sut.countInto(registry);
    const tracer = new tracing.BasicTracerProvider({ spanProcessors: [sut] }).getTracer('t');

    tracer.startSpan('whole', { attributes: { a: 1 } }).end();
    reading = { cpuBusy: 0.95, freeMemoryBytes: 64 * MiB };
    const failed = tracer.startSpan('failed', { attributes: { secret: 'prompt text' } });
    failed.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
    const ok = tracer.startSpan('ok', { attributes: { b: 2 } });
    // The decision was the head's: the host recovering before the end changes nothing.
    reading = { cpuBusy: 0.2, freeMemoryBytes: 4096 * MiB };
    failed.end();
    ok.end();

    const [whole, reducedError, reducedOk] = exporter.getFinishedSpans();
    expect(whole).toMatchObject({ name: 'whole', attributes: { a: 1 } });
    expect(reducedError).toMatchObject({
      name: 'reduced',
      attributes: { [EDGE_REDUCED_ATTRIBUTE]: true },
      status: { code: SpanStatusCode.ERROR },
      events: [],
      links: [],
    });
    expect(reducedError.status.message).toBeUndefined();
    expect(reducedError.spanContext().traceId).toBe(failed.spanContext().traceId);
    expect(reducedOk.status.code).toBe(SpanStatusCode.UNSET);
    expect(Object.keys(reducedOk.attributes)).toEqual([EDGE_REDUCED_ATTRIBUTE]);
    expect(sut.counts).toEqual({ full: 1, reduced: 2 });
    expect(await registry.metrics()).toContain('fathom_trace_spans_total{sampling="reduced"} 2');
  });
});
