import { OtlpReceiver } from '@fathom/testing';
import { startTracing, stopTracing, tracer, tracingEdgeSampling } from './tracing';

describe('startTracing', () => {
  let receiver: OtlpReceiver;
  const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  beforeAll(async () => {
    receiver = await new OtlpReceiver().start();
    // The SDK's exporter reads the standard variable itself.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
    await receiver.close();
  });

  it("exports the service's spans through edge sampling, counted", async () => {
    startTracing('fathom-edge-test', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    const edge = tracingEdgeSampling();
    expect(edge).not.toBeNull();
    tracer('fathom.test').startSpan('work').end();
    await stopTracing();
    const spans = receiver.spans('fathom.test');
    expect(spans).toHaveLength(1);
    // Whole or reduced as this host stands now; either way counted once and exported.
    expect(edge!.counts.full + edge!.counts.reduced).toBe(1);
    expect(spans[0].name).toBe(edge!.counts.full ? 'work' : 'reduced');
    expect(tracingEdgeSampling()).toBeNull();
  });
});
