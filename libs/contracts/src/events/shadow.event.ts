import { z } from 'zod';

/**
 * One production request offered to shadow testing (topic `fathom.shadow.request.v1`), published
 * by whatever taps production traffic (a gateway plugin, a log shipper). Fathom redacts it by
 * the shadow campaign's rules before it stores or sends anything, replays it against the
 * primary, the secondary (same version as the primary) and the candidate, and compares.
 *
 * Not tied to a run: `source` names the tap, `endpoint` the OpenAI-compatible path the request
 * was made to (only `/v1/chat/completions` is replayed today), `intent` the caller's label for
 * what the user wanted (results are reported per endpoint and per intent; absent = `unlabelled`).
 */
export const ShadowRequestSchema = z.object({
  id: z.string().min(1),
  schemaVersion: z.literal(1),
  /** Epoch milliseconds when production served it. */
  emittedAt: z.number().int().nonnegative(),
  source: z.string().min(1),
  /** The shadow campaign it is offered to; absent: every live or topic campaign. */
  campaignId: z.string().min(1).optional(),
  endpoint: z.literal('/v1/chat/completions'),
  intent: z.string().min(1).optional(),
  /** The request body as production received it (OpenAI chat completion request). */
  body: z.looseObject({
    messages: z.array(z.looseObject({ role: z.string(), content: z.string() })).min(1),
  }),
});
export type ShadowRequest = z.infer<typeof ShadowRequestSchema>;

/**
 * A live shadow campaign was stopped (topic `fathom.shadow.control.v1`), published by the
 * orchestrator that took the stop when another one runs the campaign: that one's runner stops on
 * it at once instead of at its next lease pass. Every orchestrator reads every message.
 */
export const ShadowControlSchema = z.object({
  id: z.string().min(1),
  schemaVersion: z.literal(1),
  emittedAt: z.number().int().nonnegative(),
  campaignId: z.string().min(1),
  kind: z.literal('stopped'),
});
export type ShadowControl = z.infer<typeof ShadowControlSchema>;
