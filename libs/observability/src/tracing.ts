import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import {
  EDGE_SAMPLING_DEFAULTS,
  EdgeSamplingSpanProcessor,
  HostPressure,
  type EdgeSamplingOptions,
} from './edge-sampling';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { trace, type Tracer } from '@opentelemetry/api';

let sdk: NodeSDK | null = null;
let edge: EdgeSamplingSpanProcessor | null = null;

/**
 * Starts OpenTelemetry tracing for this process once. Spans are exported over OTLP/HTTP when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the SDK reads the standard OTEL_* variables); without it
 * the SDK still runs so that trace context is created and propagated (W3C traceparent in HTTP
 * and Kafka headers) and joins with the target's traces, but nothing is exported. Exported spans
 * pass edge sampling (`edgeSampling`, default the spec's thresholds; null: every span whole).
 */
export function startTracing(
  serviceName: string,
  env: Readonly<Record<string, string | undefined>>,
  edgeSampling: EdgeSamplingOptions | null = EDGE_SAMPLING_DEFAULTS,
): void {
  if (sdk) return;
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const exporting = endpoint ? new tracing.BatchSpanProcessor(new OTLPTraceExporter()) : null;
  edge =
    exporting && edgeSampling
      ? new EdgeSamplingSpanProcessor(exporting, new HostPressure(undefined, edgeSampling))
      : null;
  sdk = new NodeSDK({
    serviceName,
    ...(exporting ? { spanProcessors: [edge ?? exporting] } : {}),
    instrumentations: [],
  });
  sdk.start();
}

/** The process's edge-sampling stage (counts of spans exported whole and reduced); null when off. */
export function tracingEdgeSampling(): EdgeSamplingSpanProcessor | null {
  return edge;
}

export async function stopTracing(): Promise<void> {
  const running = sdk;
  sdk = null;
  edge = null;
  await running?.shutdown();
}

export function tracer(name = 'fathom'): Tracer {
  return trace.getTracer(name);
}
