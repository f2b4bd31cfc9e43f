import { startSimTarget, type SimTarget } from '@fathom/sim';
import { OtlpReceiver, otlpAttributes } from '@fathom/testing';
import { startEmbedded, waitForRun, type EmbeddedFathom } from '@fathom/runtime';

/**
 * OpenTelemetry GenAI client telemetry end to end: an embedded Fathom with
 * OTEL_EXPORTER_OTLP_ENDPOINT at an in-process OTLP/HTTP receiver runs a campaign against the
 * simulated target, whose ground truth says which traceparent and x-fathom-request each request
 * carried and which id it answered with.
 */
describe('GenAI client telemetry (load-generator)', () => {
  jest.setTimeout(90_000);
  let sim: SimTarget;
  let receiver: OtlpReceiver;
  let fathom: EmbeddedFathom;
  const previous = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;

  beforeAll(async () => {
    sim = await startSimTarget({ port: 0 });
    receiver = await new OtlpReceiver().start();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    fathom = await startEmbedded({ dataDir: null, port: 0, logLevels: false });
  });

  afterAll(async () => {
    if (previous === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = previous;
    await receiver.close();
    await sim.close();
  });

  it('exports a span per request joined with the target, and the four metrics', async () => {
    const { runId } = await fathom.campaigns.submit(
      {
        name: 'genai',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['Say hello.'], maxTokens: 8 },
        load: { concurrency: 2, durationMs: 1500 },
      },
      'cli',
    );
    const run = await waitForRun(fathom.runs, runId, { timeoutMs: 60_000 });
    await fathom.close(); // the load-generator's shutdown pushes what is left
    const requests = run.summary!.requests;
    expect(requests).toBeGreaterThan(0);

    const spans = receiver.spans('fathom.genai-client');
    expect(spans).toHaveLength(requests);
    for (const span of spans.slice(0, 10)) {
      const attributes = otlpAttributes(span.attributes);
      expect(attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'fathom-sim-8b',
        'gen_ai.provider.name': 'openai',
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(sim.url).port),
      });
      const serverId = attributes['fathom.server.request_id'] as string;
      const truth = (await (await fetch(`${sim.url}/sim/requests/${serverId}`)).json()) as {
        traceparent: string;
        fathomRequestId: string;
      };
      expect(truth.traceparent).toBe(`00-${span.traceId}-${span.spanId}-01`);
      expect(truth.fathomRequestId).toBe(attributes['fathom.request.id']);
    }

    // Metric exports are cumulative: the last export holds every request.
    const lastCount = (name: string) => {
      const all = receiver.metrics('fathom.genai-client').filter((m) => m.name === name);
      const last = all.at(-1);
      return (last?.histogram?.dataPoints ?? []).reduce((n, p) => n + Number(p.count), 0);
    };
    expect(lastCount('gen_ai.client.operation.duration')).toBe(requests);
    expect(lastCount('gen_ai.client.operation.time_to_first_chunk')).toBe(requests);
    expect(lastCount('gen_ai.client.token.usage')).toBe(2 * requests);
    expect(lastCount('gen_ai.client.operation.time_per_output_chunk')).toBeGreaterThan(requests);
  });
});
