import type { MeasurementValidity, RunTelemetryCompleteness } from '@fathom/contracts';

/**
 * A run whose telemetry did not all arrive measured less than the target served: invalid, with
 * a `telemetry-lost` reason giving how many requests (and which shards) the summary lacks.
 */
export function withTelemetryLoss(
  validity: MeasurementValidity,
  completeness: RunTelemetryCompleteness | undefined,
): MeasurementValidity {
  if (!completeness) return validity;
  const { requestsCounted, requestsMissing, shardsMissing } = completeness;
  if (requestsMissing === 0 && shardsMissing.length === 0) return validity;
  const parts = [
    ...(requestsMissing > 0
      ? [`${requestsMissing} of ${requestsCounted} requests the generators counted are in no stored window`]
      : []),
    ...(shardsMissing.length
      ? [`shard(s) ${shardsMissing.map((s) => s.index).join(', ')} stopped reporting before they ended`]
      : []),
  ];
  return {
    valid: false,
    reasons: [
      ...validity.reasons,
      {
        kind: 'telemetry-lost',
        detail: parts.join('; '),
        figures: { requestsCounted, requestsMissing, shardsMissing: shardsMissing.length },
      },
    ],
  };
}
