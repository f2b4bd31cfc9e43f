import type { RequestRecord } from '@fathom/contracts';
import { OtlpReceiver, otlpAttributes as attrs } from '@fathom/testing';
import { GENAI_DURATION_BUCKETS_S, GenAiClientTelemetry, genAiRunAttributes } from './genai-client.telemetry';
import { EDGE_REDUCED_ATTRIBUTE, EDGE_SAMPLING_DEFAULTS, type HostReadings } from '../edge-sampling';

const MiB = 1024 * 1024;
/** A host with room to spare: edge sampling keeps every span whole. */
const CALM: HostReadings = { cpuBusy: 0.2, freeMemoryBytes: 4096 * MiB };

const SPEC = {
  name: 'c',
  target: { baseUrl: 'http://127.0.0.1:8123/v1', metricsUrls: [] },
  scenario: {
    type: 'chat' as const,
    model: 'fathom-sim-8b',
    prompts: ['hi'],
    endpoint: 'chat' as const,
    stream: true,
    maxTokens: 8,
    logprobs: false,
  },
  load: {
    concurrency: 1,
    durationMs: 1000,
    requestTimeoutMs: 30000,
    recordsPerSecond: 100,
    maxRecords: 360_000,
    recordSampleRate: 1,
    shards: 1,
  },
  slo: {},
  reruns: { maxReruns: 1, cooldownMs: 5000 },
};

function record(over: Partial<RequestRecord>): RequestRecord {
  return {
    requestId: 'run-0-1',
    shard: 0,
    scheduledAt: 1_700_000_000_000,
    startedAt: 1_700_000_000_000,
    ttftMs: 50,
    e2eMs: 250,
    correctedE2eMs: 250,
    chunkOffsetsMs: [50, 100, 150, 250],
    status: 200,
    errorClass: null,
    inputTokensClient: 12,
    outputTokensClient: 4,
    usage: { promptTokens: 12, completionTokens: 4, cachedTokens: null },
    content: 'a b c d',
    finishReason: 'length',
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: '0000000000000001',
    serverRequestId: 'cmpl-42',
    ...over,
  };
}

describe(GenAiClientTelemetry.name, () => {
  let receiver: OtlpReceiver;
  let sut: GenAiClientTelemetry;

  beforeEach(async () => {
    receiver = new OtlpReceiver();
    await receiver.start();
    sut = new GenAiClientTelemetry({
      endpoint: receiver.url,
      serviceName: 'fathom-test',
      exportIntervalMs: 60_000,
      hostReadings: () => CALM,
    });
  });

  afterEach(async () => {
    await sut.shutdown();
    await receiver.close();
  });

  function exported() {
    const metrics = receiver.metrics('fathom.genai-client');
    return {
      metrics: new Map(metrics.map((m) => [m.name, m])),
      spans: receiver.spans('fathom.genai-client'),
    };
  }

  it('exports the four GenAI client metrics with their attributes', async () => {
    const run = genAiRunAttributes(SPEC)!;
    sut.observe(record({}), run);
    sut.observe(
      record({
        requestId: 'run-0-2',
        spanId: '0000000000000002',
        e2eMs: 3000,
        ttftMs: null,
        chunkOffsetsMs: [],
        errorClass: 'timeout',
        errorMessage: 'timed out',
        status: 0,
        usage: null,
        outputTokensClient: 0,
      }),
      run,
    );
    await sut.flush();

    const { metrics } = exported();
    const duration = metrics.get('gen_ai.client.operation.duration')!;
    expect(duration.unit).toBe('s');
    const points = duration.histogram!.dataPoints.map((p) => ({
      attributes: attrs(p.attributes),
      count: Number(p.count),
      sum: p.sum,
    }));
    expect(points).toEqual(
      expect.arrayContaining([
        {
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': 'openai',
            'gen_ai.request.model': 'fathom-sim-8b',
            'server.address': '127.0.0.1',
            'server.port': 8123,
          },
          count: 1,
          sum: 0.25,
        },
        expect.objectContaining({
          attributes: expect.objectContaining({ 'error.type': 'timeout' }),
          count: 1,
          sum: 3,
        }),
      ]),
    );
    expect(duration.histogram!.dataPoints[0].explicitBounds).toEqual(GENAI_DURATION_BUCKETS_S);

    const tokens = metrics.get('gen_ai.client.token.usage')!;
    expect(tokens.unit).toBe('{token}');
    const byType = Object.fromEntries(
      tokens.histogram!.dataPoints.map((p) => [attrs(p.attributes)['gen_ai.token.type'], p.sum]),
    );
    expect(byType).toEqual({ input: 12, output: 4 }); // the failed request used no tokens

    const ttft = metrics.get('gen_ai.client.operation.time_to_first_chunk')!;
    expect(ttft.histogram!.dataPoints.map((p) => [Number(p.count), p.sum])).toEqual([[1, 0.05]]);
    const perChunk = metrics.get('gen_ai.client.operation.time_per_output_chunk')!;
    expect(perChunk.histogram!.dataPoints.map((p) => [Number(p.count), Number(p.sum.toFixed(3))])).toEqual([
      [3, 0.2],
    ]);
  });

  it('exports one CLIENT span per record with the ids sent in traceparent and the server request id', async () => {
    const run = genAiRunAttributes(SPEC)!;
    sut.observe(record({}), run);
    sut.observe(
      record({
        spanId: '0000000000000002',
        traceId: 'ffffffffffffffffffffffffffffff01',
        errorClass: 'http-5xx',
        errorMessage: 'HTTP 503',
        status: 503,
      }),
      run,
    );
    await sut.flush();

    const { spans } = exported();
    expect(spans).toHaveLength(2);
    const [ok, failed] = [...spans].sort((a, b) => a.spanId.localeCompare(b.spanId));
    expect(ok).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: '0000000000000001',
      name: 'chat fathom-sim-8b',
      kind: 3, // SPAN_KIND_CLIENT
      startTimeUnixNano: String(1_700_000_000_000n * 1_000_000n),
      endTimeUnixNano: String(1_700_000_000_250n * 1_000_000n),
    });
    expect(ok.parentSpanId ?? '').toBe('');
    expect(attrs(ok.attributes)).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'fathom-sim-8b',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 4,
      'gen_ai.response.finish_reasons': ['length'],
      'fathom.server.request_id': 'cmpl-42',
      'http.response.status_code': 200,
    });
    expect(failed.traceId).toBe('ffffffffffffffffffffffffffffff01');
    expect(attrs(failed.attributes)['error.type']).toBe('http-5xx');
    expect(failed.status).toMatchObject({ code: 2, message: 'HTTP 503' });
  });

  it('is not built for scenarios that are not one GenAI operation per request', () => {
    expect(
      genAiRunAttributes({ ...SPEC, scenario: { type: 'agents', path: '/agents/run', agents: 3, steps: 4 } }),
    ).toBeNull();
    expect(GenAiClientTelemetry.create(undefined, 'x')).toBeNull();
  });

  it('exports spans reduced to trace id and error flag while the host is short (edge sampling), and counts them', async () => {
    let reading = CALM;
    const edged = new GenAiClientTelemetry({
      endpoint: receiver.url,
      serviceName: 'fathom-edge',
      exportIntervalMs: 60_000,
      edgeSampling: { ...EDGE_SAMPLING_DEFAULTS, refreshMs: 0 },
      hostReadings: () => reading,
    });
    const run = genAiRunAttributes(SPEC)!;
    edged.observe(record({ spanId: '00000000000000a1' }), run);
    // CPU 90 % and 64 MiB free: above 75 % and below 128 MB, the spec's short host.
    reading = { cpuBusy: 0.9, freeMemoryBytes: 64 * MiB };
    edged.observe(record({ spanId: '00000000000000a2', traceId: '11111111111111111111111111111111' }), run);
    edged.observe(
      record({
        spanId: '00000000000000a3',
        traceId: '22222222222222222222222222222222',
        errorClass: 'http-5xx',
        errorMessage: 'HTTP 503',
        status: 503,
      }),
      run,
    );
    // Short on CPU only: not short.
    reading = { cpuBusy: 0.9, freeMemoryBytes: 1024 * MiB };
    edged.observe(record({ spanId: '00000000000000a4' }), run);
    await edged.flush();
    await edged.shutdown();

    const spans = new Map(exported().spans.map((s) => [s.spanId, s]));
    expect(spans.size).toBe(4);
    for (const whole of ['00000000000000a1', '00000000000000a4'])
      expect(attrs(spans.get(whole)!.attributes)).toMatchObject({ 'fathom.server.request_id': 'cmpl-42' });
    const ok = spans.get('00000000000000a2')!;
    const failed = spans.get('00000000000000a3')!;
    expect(ok.traceId).toBe('11111111111111111111111111111111');
    expect(failed.traceId).toBe('22222222222222222222222222222222');
    for (const reduced of [ok, failed]) {
      expect(reduced.name).toBe('reduced');
      expect(attrs(reduced.attributes)).toEqual({ [EDGE_REDUCED_ATTRIBUTE]: true });
      expect(reduced.startTimeUnixNano).toBe(reduced.endTimeUnixNano);
    }
    expect(ok.status.code ?? 0).toBe(0);
    expect(failed.status.code).toBe(2);
    expect(failed.status.message ?? '').toBe('');
    expect(edged.edge?.counts).toEqual({ full: 2, reduced: 2 });
  });
});
