import { ROOT_CONTEXT, context, propagation } from '@opentelemetry/api';

/**
 * Headers with the active trace context injected (W3C `traceparent`/`tracestate` with the SDK's
 * propagator). Without a registered SDK this returns the headers unchanged.
 */
export function withTraceContext(headers: Readonly<Record<string, string>> = {}): Record<string, string> {
  const carrier: Record<string, string> = { ...headers };
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** Runs `work` inside the trace context carried by a message's headers. */
export function runInMessageContext<T>(headers: Readonly<Record<string, string>>, work: () => T): T {
  return context.with(propagation.extract(ROOT_CONTEXT, headers), work);
}
