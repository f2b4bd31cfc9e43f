import type { CampaignSpec } from '@fathom/contracts';
import type { TelemetrySink } from '@fathom/load';
import { genAiRunAttributes, type GenAiClientTelemetry } from '@fathom/observability';

/** Provider token of the GenAI client telemetry (null when no OTLP endpoint is set). */
export const GENAI_TELEMETRY = Symbol('GENAI_TELEMETRY');

/**
 * The shard's sink, with each record also handed to the GenAI client telemetry (OpenTelemetry
 * metrics and a span). Runs where the records arrive (this thread); a telemetry failure never
 * reaches the engine or the publisher.
 */
export function withGenAiTelemetry(
  sink: TelemetrySink,
  telemetry: GenAiClientTelemetry | null,
  spec: CampaignSpec,
): TelemetrySink {
  const run = telemetry && genAiRunAttributes(spec);
  if (!telemetry || !run) return sink;
  return {
    record: (record) => {
      sink.record(record);
      try {
        telemetry.observe(record, run);
      } catch {
        // Telemetry is an output: it never stops the load (the SDK reports its own export errors).
      }
    },
    window: (window) => sink.window(window),
  };
}
