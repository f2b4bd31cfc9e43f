/** One request's verdicts: every latency SLO it was held to, and every semantic check run on it. */
export interface RequestVerdict {
  requestId: string;
  /** All latency SLOs met (TTFT, ITL, E2E as the run's tier defines them) and no error. */
  latencySloMet: boolean;
  /** Named semantic check -> passed. Empty when no semantic check applied to the request. */
  semanticChecks: Readonly<Record<string, boolean>>;
}

export interface GoodputReport {
  requests: number;
  /** Requests that met every latency SLO. */
  goodRequests: number;
  /** Requests that met every latency SLO AND passed every semantic check. */
  semanticallyGoodRequests: number;
  /** goodRequests / requests; null for an empty run. */
  goodput: number | null;
  semanticGoodput: number | null;
  /** Same ratios per second of run time when `durationS` is given (vLLM/GuideLLM: goodput as a rate). */
  goodputPerSecond: number | null;
  semanticGoodputPerSecond: number | null;
  /** Failures per named check among requests that met their latency SLOs. */
  checkFailures: Record<string, number>;
}

/**
 * Goodput (as GuideLLM and vLLM define it: requests that met every SLO) and semantic goodput
 * (those that also passed every semantic check). A request with no semantic check counts as
 * semantically good when its latency SLOs pass: the check set is the run's, and a request
 * the monitor did not sample must not count against it.
 */
export function computeGoodput(verdicts: readonly RequestVerdict[], durationS?: number): GoodputReport {
  let good = 0;
  let semantic = 0;
  const checkFailures: Record<string, number> = {};
  for (const v of verdicts) {
    if (!v.latencySloMet) continue;
    good++;
    let passed = true;
    for (const [name, ok] of Object.entries(v.semanticChecks)) {
      if (!ok) {
        passed = false;
        checkFailures[name] = (checkFailures[name] ?? 0) + 1;
      }
    }
    if (passed) semantic++;
  }
  const n = verdicts.length;
  const rate = durationS !== undefined && durationS > 0;
  return {
    requests: n,
    goodRequests: good,
    semanticallyGoodRequests: semantic,
    goodput: n === 0 ? null : good / n,
    semanticGoodput: n === 0 ? null : semantic / n,
    goodputPerSecond: rate ? good / durationS : null,
    semanticGoodputPerSecond: rate ? semantic / durationS : null,
    checkFailures,
  };
}
