import { z } from 'zod';

export const ScheduleInputSchema = z
  .object({
    campaignId: z.string().min(1),
    /**
     * `interval`: a run every `intervalMs` (a slot that finds the campaign still running is
     * skipped, never queued); `always-on`: a new run as soon as the previous one ended plus
     * `intervalMs` (the gap, 0 allowed).
     */
    mode: z.enum(['interval', 'always-on']),
    intervalMs: z
      .number()
      .int()
      .min(0)
      .max(30 * 24 * 3600 * 1000),
    /** First slot, epoch ms; default now. */
    startAt: z.number().int().nonnegative().optional(),
  })
  .strict()
  .refine((s) => s.mode !== 'interval' || s.intervalMs >= 1000, {
    message: 'an interval schedule needs intervalMs >= 1000',
    path: ['intervalMs'],
  });
export type ScheduleInput = z.infer<typeof ScheduleInputSchema>;
