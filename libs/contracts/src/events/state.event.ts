import { z } from 'zod';
import { envelopeShape } from '../envelope';

/** A tier change of one run, with the objective and the figures that caused it. */
export const SloTierChangeSchema = z.object({
  ...envelopeShape,
  from: z.string().nullable(),
  to: z.string(),
  reason: z.string(),
  figures: z.record(z.string(), z.number()),
});
export type SloTierChange = z.infer<typeof SloTierChangeSchema>;

export const BreakerStateSchema = z.enum(['closed', 'open', 'half-open']);
export type BreakerState = z.infer<typeof BreakerStateSchema>;

export const BreakerChangeSchema = z.object({
  ...envelopeShape,
  breaker: z.object({ target: z.string(), layer: z.string(), node: z.string() }),
  from: BreakerStateSchema,
  to: BreakerStateSchema,
  reason: z.string(),
});
export type BreakerChange = z.infer<typeof BreakerChangeSchema>;
