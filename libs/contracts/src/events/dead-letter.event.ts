import { z } from 'zod';

/**
 * A message a consumer could not take: it failed validation, or its handler kept failing.
 * The original bytes are kept (base64) so nothing is lost and it can be replayed.
 */
export const DeadLetterSchema = z.object({
  id: z.string(),
  schemaVersion: z.literal(1),
  emittedAt: z.number(),
  campaignId: z.string().nullable(),
  runId: z.string().nullable(),
  originalTopic: z.string(),
  consumerGroup: z.string(),
  partition: z.number().int().nullable(),
  offset: z.string().nullable(),
  key: z.string().nullable(),
  reason: z.enum(['invalid-json', 'schema-mismatch', 'handler-failed']),
  error: z.string(),
  payloadBase64: z.string(),
  attempts: z.number().int().nonnegative(),
});
export type DeadLetter = z.infer<typeof DeadLetterSchema>;
