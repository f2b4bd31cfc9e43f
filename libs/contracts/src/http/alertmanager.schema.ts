import { z } from 'zod';

/**
 * Alertmanager's webhook body, payload version 4 (prometheus/alertmanager docs/configuration.md,
 * "webhook payload format"; notify/webhook/webhook.go). Newer Alertmanagers add fields
 * (`notification_reason`, `routeLabels`): unknown fields are ignored, never refused.
 * `commonLabels`/`commonAnnotations` may be null; `endsAt` is `0001-01-01T00:00:00Z` while firing.
 */
const LabelSetSchema = z.record(z.string(), z.string());

export const AlertmanagerAlertSchema = z.looseObject({
  status: z.enum(['firing', 'resolved']),
  labels: LabelSetSchema,
  annotations: LabelSetSchema.nullish(),
  startsAt: z.string().min(1),
  endsAt: z.string().nullish(),
  generatorURL: z.string().nullish(),
  fingerprint: z.string().min(1),
});
export type AlertmanagerAlert = z.infer<typeof AlertmanagerAlertSchema>;

export const AlertmanagerPayloadSchema = z.looseObject({
  version: z.literal('4'),
  groupKey: z.string().min(1),
  truncatedAlerts: z.number().int().nonnegative().default(0),
  status: z.enum(['firing', 'resolved']),
  receiver: z.string(),
  groupLabels: LabelSetSchema.nullish(),
  commonLabels: LabelSetSchema.nullish(),
  commonAnnotations: LabelSetSchema.nullish(),
  externalURL: z.string().nullish(),
  alerts: z.array(AlertmanagerAlertSchema),
});
export type AlertmanagerPayload = z.infer<typeof AlertmanagerPayloadSchema>;

/** A label rule: an alert matches when each listed label has exactly the given value. */
export const AlertRuleInputSchema = z
  .object({
    name: z.string().min(1).max(200),
    /** Label name -> required value, e.g. `{ "alertname": "LlmP99High", "service": "chat" }`. */
    matchLabels: z
      .record(z.string().min(1), z.string())
      .refine((m) => Object.keys(m).length > 0, { message: 'give at least one label to match' }),
    /** The stored campaign a firing alert starts a run of. */
    campaignId: z.string().min(1),
  })
  .strict();
export type AlertRuleInput = z.infer<typeof AlertRuleInputSchema>;

export function labelsMatch(
  matchLabels: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
): boolean {
  return Object.entries(matchLabels).every(([name, value]) => labels[name] === value);
}
