import { SpanKind, SpanStatusCode, type Attributes, type Histogram } from '@opentelemetry/api';
import { metrics, resources, tracing } from '@opentelemetry/sdk-node';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { CampaignSpec, RequestRecord } from '@fathom/contracts';
import {
  EDGE_SAMPLING_DEFAULTS,
  EdgeSamplingSpanProcessor,
  HostPressure,
  osHostReadings,
  type EdgeSamplingOptions,
  type HostReadings,
} from '../edge-sampling';

/**
 * OpenTelemetry GenAI semantic conventions for what Fathom sends as a client
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-metrics/, .../gen-ai-spans/):
 * the four client metrics, and one CLIENT span per sampled request whose trace and span ids are
 * the ones the target received in `traceparent`, so its server spans hang under ours. Built from
 * the per-request records (the load-generator's main thread, whichever thread ran the engine):
 * with `load.recordSampleRate` below 1 the metrics cover that sample.
 */

/** Bucket advice of the conventions for gen_ai.client.operation.duration and the chunk timings, seconds. */
export const GENAI_DURATION_BUCKETS_S = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/** Bucket advice of the conventions for gen_ai.client.token.usage. */
export const GENAI_TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];

/** What every request of a run shares: the GenAI operation, model, provider and server. */
export interface GenAiRunAttributes {
  operation: 'chat' | 'text_completion' | 'embeddings';
  model: string | null;
  provider: string;
  serverAddress: string;
  serverPort: number;
}

/**
 * The GenAI attributes of a campaign's requests; null for scenarios that are not one GenAI
 * client operation per request (http steps, RAG layers, agent workflows).
 */
export function genAiRunAttributes(spec: CampaignSpec): GenAiRunAttributes | null {
  const scenario = spec.scenario;
  let operation: GenAiRunAttributes['operation'];
  if (scenario.type === 'chat') operation = scenario.endpoint === 'completions' ? 'text_completion' : 'chat';
  else if (scenario.type === 'embeddings') operation = 'embeddings';
  else if (scenario.type === 'tool-chain') operation = 'chat';
  else return null;
  const url = new URL(spec.target.baseUrl);
  return {
    operation,
    model: 'model' in scenario && scenario.model ? scenario.model : null,
    // The wire protocol is OpenAI's (vLLM, TGI and others serve it); the conventions' value for it.
    provider: 'openai',
    serverAddress: url.hostname,
    serverPort: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
  };
}

/** Hands the SDK the ids Fathom already sent in `traceparent` (set just before each synchronous startSpan). */
class PresetIdGenerator {
  traceId = '';
  spanId = '';
  generateTraceId(): string {
    return this.traceId;
  }
  generateSpanId(): string {
    return this.spanId;
  }
}

export interface GenAiClientTelemetryOptions {
  /** OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT): metrics go to /v1/metrics, spans to /v1/traces. */
  endpoint: string;
  serviceName: string;
  /** How often metrics are pushed (default 10 s); shutdown() pushes the rest. */
  exportIntervalMs?: number;
  /** Edge sampling of the spans (default: the spec's thresholds); null exports every span whole. */
  edgeSampling?: EdgeSamplingOptions | null;
  /** Host readings the edge sampling judges (default: `os`); injectable for tests. */
  hostReadings?: () => HostReadings;
}

export class GenAiClientTelemetry {
  private readonly meterProvider: metrics.MeterProvider;
  private readonly tracerProvider: tracing.BasicTracerProvider;
  private readonly ids = new PresetIdGenerator();
  private readonly duration: Histogram;
  private readonly tokens: Histogram;
  private readonly firstChunk: Histogram;
  private readonly perChunk: Histogram;
  /** The edge-sampling stage of the spans (its `counts`); null when it is off. */
  readonly edge: EdgeSamplingSpanProcessor | null;

  /** null without an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT): nothing is recorded, nothing costs. */
  static create(
    endpoint: string | undefined,
    serviceName: string,
    edgeSampling: EdgeSamplingOptions | null = EDGE_SAMPLING_DEFAULTS,
  ): GenAiClientTelemetry | null {
    return endpoint ? new GenAiClientTelemetry({ endpoint, serviceName, edgeSampling }) : null;
  }

  constructor(options: GenAiClientTelemetryOptions) {
    const base = options.endpoint.replace(/\/+$/, '');
    const resource = resources.resourceFromAttributes({ 'service.name': options.serviceName });
    this.meterProvider = new metrics.MeterProvider({
      resource,
      readers: [
        new metrics.PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter({ url: `${base}/v1/metrics` }),
          exportIntervalMillis: options.exportIntervalMs ?? 10_000,
        }),
      ],
    });
    const exporting = new tracing.BatchSpanProcessor(new OTLPTraceExporter({ url: `${base}/v1/traces` }));
    const edge = options.edgeSampling === undefined ? EDGE_SAMPLING_DEFAULTS : options.edgeSampling;
    this.edge = edge
      ? new EdgeSamplingSpanProcessor(
          exporting,
          new HostPressure(options.hostReadings ?? osHostReadings(), edge),
        )
      : null;
    this.tracerProvider = new tracing.BasicTracerProvider({
      resource,
      idGenerator: this.ids,
      spanProcessors: [this.edge ?? exporting],
    });
    const meter = this.meterProvider.getMeter('fathom.genai-client');
    const seconds = (name: string, description: string) =>
      meter.createHistogram(name, {
        unit: 's',
        description,
        advice: { explicitBucketBoundaries: GENAI_DURATION_BUCKETS_S },
      });
    this.duration = seconds('gen_ai.client.operation.duration', 'GenAI operation duration');
    this.firstChunk = seconds(
      'gen_ai.client.operation.time_to_first_chunk',
      'Time to receive the first chunk in a streaming operation',
    );
    this.perChunk = seconds(
      'gen_ai.client.operation.time_per_output_chunk',
      'Time between consecutive chunks in a streaming operation',
    );
    this.tokens = meter.createHistogram('gen_ai.client.token.usage', {
      unit: '{token}',
      description: 'Number of input and output tokens used',
      advice: { explicitBucketBoundaries: GENAI_TOKEN_BUCKETS },
    });
  }

  /** Records one request: the metrics, and its CLIENT span with the ids the target saw. */
  observe(record: RequestRecord, run: GenAiRunAttributes): void {
    const attributes: Attributes = {
      'gen_ai.operation.name': run.operation,
      'gen_ai.provider.name': run.provider,
      'server.address': run.serverAddress,
      'server.port': run.serverPort,
    };
    if (run.model) attributes['gen_ai.request.model'] = run.model;
    if (record.errorClass) attributes['error.type'] = record.errorClass;

    this.duration.record(record.e2eMs / 1000, attributes);
    if (record.ttftMs !== null) this.firstChunk.record(record.ttftMs / 1000, attributes);
    const offsets = record.chunkOffsetsMs;
    for (let i = 1; i < offsets.length; i++)
      this.perChunk.record((offsets[i] - offsets[i - 1]) / 1000, attributes);
    const inputTokens = record.usage?.promptTokens ?? record.inputTokensClient;
    const outputTokens = record.usage?.completionTokens ?? record.outputTokensClient;
    if (!record.errorClass) {
      this.tokens.record(inputTokens, { ...attributes, 'gen_ai.token.type': 'input' });
      if (run.operation !== 'embeddings')
        this.tokens.record(outputTokens, { ...attributes, 'gen_ai.token.type': 'output' });
    }
    if (record.traceId && record.spanId) this.span(record, attributes, inputTokens, outputTokens);
  }

  private span(
    record: RequestRecord,
    attributes: Attributes,
    inputTokens: number,
    outputTokens: number,
  ): void {
    const spanAttributes: Attributes = {
      ...attributes,
      'gen_ai.usage.input_tokens': inputTokens,
      'fathom.request.id': record.requestId,
    };
    if (attributes['gen_ai.operation.name'] !== 'embeddings')
      spanAttributes['gen_ai.usage.output_tokens'] = outputTokens;
    if (record.finishReason) spanAttributes['gen_ai.response.finish_reasons'] = [record.finishReason];
    if (record.status > 0) spanAttributes['http.response.status_code'] = record.status;
    // The target's own id of the request: joins this span with its logs.
    if (record.serverRequestId) spanAttributes['fathom.server.request_id'] = record.serverRequestId;
    const model = attributes['gen_ai.request.model'];
    this.ids.traceId = record.traceId!;
    this.ids.spanId = record.spanId!;
    const span = this.tracerProvider
      .getTracer('fathom.genai-client')
      .startSpan(`${String(attributes['gen_ai.operation.name'])}${model ? ` ${String(model)}` : ''}`, {
        kind: SpanKind.CLIENT,
        startTime: record.startedAt,
        attributes: spanAttributes,
      });
    if (record.errorClass)
      span.setStatus({ code: SpanStatusCode.ERROR, message: record.errorMessage ?? record.errorClass });
    span.end(record.startedAt + record.e2eMs);
  }

  /** Pushes what is pending (metrics and spans) now. */
  async flush(): Promise<void> {
    await Promise.all([this.meterProvider.forceFlush(), this.tracerProvider.forceFlush()]);
  }

  async shutdown(): Promise<void> {
    await Promise.all([this.meterProvider.shutdown(), this.tracerProvider.shutdown()]);
  }
}
