import { z } from 'zod';

/** Percentiles every latency metric reports besides P50/P95/P99 (GuideLLM's and vLLM bench's `--metric-percentiles`). */
export const ReportSpecSchema = z
  .object({
    /** Each in (0, 100], e.g. `[50, 90, 99, 99.9]`; reported as `p50`, `p90`, `p99`, `p99.9`. */
    percentiles: z
      .array(z.number().gt(0).max(100))
      .min(1)
      .max(16)
      .refine((ps) => new Set(ps).size === ps.length, { message: 'duplicate percentile' }),
  })
  .strict();
export type ReportSpec = z.infer<typeof ReportSpecSchema>;
