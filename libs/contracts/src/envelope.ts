import { randomUUID } from 'node:crypto';
import { z } from 'zod';

/**
 * Fields every event carries. `id` makes consumers idempotent (a redelivered event is skipped),
 * `campaignId`/`runId` join everything of one run, `schemaVersion` is the version of the event's
 * own shape (it matches the topic's `.vN` suffix), `emittedAt` is epoch milliseconds.
 */
export const envelopeShape = {
  id: z.string().min(1),
  schemaVersion: z.literal(1),
  campaignId: z.string().min(1),
  runId: z.string().min(1),
  emittedAt: z.number().int().nonnegative(),
};

export type Envelope = {
  id: string;
  schemaVersion: 1;
  campaignId: string;
  runId: string;
  emittedAt: number;
};

/** Builds the envelope fields for a new event of run `runId`. */
export function envelope(campaignId: string, runId: string, now = Date.now()): Envelope {
  return { id: randomUUID(), schemaVersion: 1, campaignId, runId, emittedAt: now };
}
