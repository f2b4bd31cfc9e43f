/**
 * Every `detector` name a service publishes on `fathom.signal.semantic.v1` (the `detector` field
 * of a detector signal). Producers and the analyzer both spell them through this object, so a
 * rename or a consumer keyed on a name nobody publishes fails to compile.
 */
export const Detectors = {
  /** semantic-monitor: a response's token-confidence spans (spec, hallucination). */
  hallucinationRisk: 'hallucination-risk',
  /** semantic-monitor: a prompt that blew up the answer (spec, anomaly class: prompt explosion). */
  promptExplosion: 'prompt-explosion',
  /** semantic-monitor: the end-of-run semantic goodput summary. */
  semanticGoodput: 'semantic-goodput',
  /** semantic-monitor: the monitor itself failed on a record (its own health, not the target's). */
  monitorFault: 'semantic-monitor-fault',
  /**
   * semantic-monitor: RAG query/document mismatch (spec, anomaly class 2): figures `pairs`,
   * `overThreshold`, `overThresholdShare`, `thresholdKl`, `meanKl`, `p95Kl`, `alarmShare` and
   * `mismatched` (1 when most pairs are over the threshold).
   */
  ragMismatch: 'rag-mismatch',
  /** semantic-monitor: responses drifted from the baseline's responses to the same prompts. */
  baselineDrift: 'baseline-drift',
  /** semantic-monitor: intent accuracy against the baseline's; `figures.intentAccuracyDrop`. */
  intentAccuracy: 'intent-accuracy',
  /** semantic-monitor: a tool version's answers drifted from its declared response schema. */
  schemaDrift: 'schema-drift',
  /**
   * gpu-collector: GPU memory bandwidth saturated over consecutive scrapes of a source (warning
   * when it opens, info when it clears); figures `peak`, `threshold`, `scrapes`. Opens the LLM breaker.
   */
  dramSaturation: 'dram-saturation',
  /**
   * semantic-monitor: the reranker refuses requests busy ("reranker busy: n/32 in use", spec) in
   * a fifth of the recent requests; figures `share`, `refused`, `requests`, `inUse`, `cap`. Opens
   * the rerank breaker.
   */
  rerankerBusy: 'reranker-busy',
  /**
   * semantic-monitor: the share of responses failing a semantic check rose over the run's own
   * (floor 8 %, spec: task success > 92 %); figures `share`, `failed`, `judged`, `bound`,
   * `baselineShare`. Opens the LLM breaker.
   */
  semanticFailureRate: 'semantic-failure-rate',
  /**
   * semantic-monitor: the LLM monitor judged a response or error fragment anomalous (spec,
   * LLM-as-a-monitor: rules first, then the anomaly model's confidence). Figures `confidence`
   * (1 for a rule hit, else the model's 1 - P(normal)), `ruleHit`, `cached`; labels `label`
   * (refusal, error-body, truncated-json, degenerate, hallucination-marker), `decidedBy`
   * (rule or model), `fragment` (response or error), `rule`, `excerpt`.
   */
  semanticAnomaly: 'semantic-anomaly',
  /**
   * orchestrator, a live shadow campaign: one signal per window with samples. `critical` once
   * the candidate regressed beyond the primary/secondary noise floor in `onRegression.windows`
   * windows in a row (the analyzer opens the candidate's breaker), `warning` for a regressed
   * window before that, `info` for a clean one (a passing probe of a half-open breaker). Run id
   * `shadowRunId(campaign)`; labels `target` (the candidate's base URL) and `metrics` (those
   * beyond the noise, comma separated); figures per metric `<metric>.difference` and
   * `<metric>.noise` (the largest over the window's groups), `samples`, `regressedInARow`.
   */
  shadowRegression: 'shadow-regression',
  /** semantic-monitor: a declared tool contract could not be used. */
  toolContractUnusable: 'tool-contract-unusable',
} as const;
export type DetectorName = (typeof Detectors)[keyof typeof Detectors];

/** The run id under which a shadow campaign's signals and breaker changes travel (it is no run). */
export function shadowRunId(shadowCampaignId: string): string {
  return `shadow:${shadowCampaignId}`;
}
