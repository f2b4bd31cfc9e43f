/** The adaptive embedding rate's floor when FATHOM_SEMANTIC_MIN_SAMPLE_RATE is not set. */
export const DEFAULT_MIN_SAMPLE_RATE = 0.01;
