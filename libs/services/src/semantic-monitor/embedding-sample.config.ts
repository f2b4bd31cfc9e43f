/** The adaptive embedding rate's floor when FATHOM_SEMANTIC_MIN_SAMPLE_RATE is not set. */
export const DEFAULT_MIN_SAMPLE_RATE = 0.01;

/**
 * FATHOM_SEMANTIC_MIN_SAMPLE_RATE: the share of responses embedded however busy the host is
 * (0 < x <= 1; default 1 %). The adaptive rate backs off to it under CPU pressure and the rate
 * starts there when it is above the usual 10 %. Raise it where baseline comparisons
 * (`semantic.baseline`) must reach their `minPairs` on a saturated machine: each embedding costs
 * tens of ms of CPU (USE lite), taken from the monitor's headroom.
 */
export function minSampleRateFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.FATHOM_SEMANTIC_MIN_SAMPLE_RATE;
  if (raw === undefined || raw.trim() === '') return DEFAULT_MIN_SAMPLE_RATE;
  const rate = Number(raw);
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1)
    throw new Error(`FATHOM_SEMANTIC_MIN_SAMPLE_RATE must be a number in (0, 1], got ${JSON.stringify(raw)}`);
  return rate;
}
