import { NodeSDK } from '@opentelemetry/sdk-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { trace, type Tracer } from '@opentelemetry/api';

let sdk: NodeSDK | null = null;

/**
 * Starts OpenTelemetry tracing for this process once. Spans are exported over OTLP/HTTP when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the SDK reads the standard OTEL_* variables); without it
 * the SDK still runs so that trace context is created and propagated (W3C traceparent in HTTP
 * and Kafka headers) and joins with the target's traces, but nothing is exported.
 */
export function startTracing(serviceName: string, env: Readonly<Record<string, string | undefined>>): void {
  if (sdk) return;
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  sdk = new NodeSDK({
    serviceName,
    traceExporter: endpoint ? new OTLPTraceExporter() : undefined,
    instrumentations: [],
  });
  sdk.start();
}

export async function stopTracing(): Promise<void> {
  const running = sdk;
  sdk = null;
  await running?.shutdown();
}

export function tracer(name = 'fathom'): Tracer {
  return trace.getTracer(name);
}
