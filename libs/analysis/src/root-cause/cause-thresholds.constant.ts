/**
 * Every threshold a root-cause function uses, with where it comes from:
 * - (spec): a number of the product spec;
 * - (suite): set on the simulator's planted faults of the root-cause suite
 *   (libs/services/src/analyzer/root-cause.int-spec.ts) and checked by the detection benchmark
 *   (bench/detection): derived on the simulator only;
 * - (campaign): a campaign setting, passed in through `RootCauseOptions`.
 */
export const CauseThresholds = {
  /** (suite) KV-cache usage peak at which admission is blocked by the cache. */
  kvUsagePeak: 0.9,
  /** (suite) Requests waiting on average that, with a full cache, mean blocks ran out. */
  kvWaitingMean: 1,
  /** (suite) Inter-token latency must grow by at least this many ms, not only by the factor. */
  decodeJumpMinMs: 5,
  /** (suite) A stall is at least this many times the baseline's median gap. */
  stallGapFactor: 20,
  /** (suite) Streamed responses needed to judge stalls. */
  stallMinResponses: 5,
  /** (suite) Stalled responses needed, and their share. */
  stallMinStalled: 3,
  stallShare: 0.2,
  /** (suite) Responses needed, and the share truncated or malformed, to name an interruption. */
  interruptionMinResponses: 5,
  interruptionShare: 0.05,
  /** (suite) Rerank calls needed, and the share refused busy (spec: 503 "reranker busy: n/32"). */
  rerankMinCalls: 5,
  rerankBusyShare: 0.2,
  /** (suite) Workflows needed, and the share that did not converge. */
  agentMinWorkflows: 5,
  agentStuckShare: 0.2,
  /** (suite) Judged responses needed for a hallucination verdict. */
  hallucinationMinJudged: 5,
  /**
   * Rise of the risky share over the baseline's: at least this much (a tenth of the answers)
   * and significant, a one-sided two-proportion z of at least `hallucinationRiseZ` (p ~ 0.0013:
   * a statistical bound, not a tuned one). (suite) The share without a baseline.
   */
  hallucinationRise: 0.1,
  hallucinationRiseZ: 3,
  hallucinationShareNoBaseline: 0.6,
  /**
   * Errors of one class (5xx, 429, timeout, connect) are judged over this longer span, warm-up
   * included, so that a rate of 1 % still gives a few errors to count (ms).
   */
  errorWindowMs: 10_000,
  /**
   * (suite) Errors of a class the client judges (timeouts, connection errors) needed in the error
   * span; a status the target answered (5xx, 429) needs one, its share judged by `errorShare`.
   */
  errorMinCount: 3,
  /**
   * (spec) Share of one error class that costs the tier: tier SLO-1 holds availability 99.5 %, so
   * more than 0.5 % of calls failing for one reason leaves it.
   */
  errorShare: 0.005,
  /** (suite) Mean requests waiting at the server over the recent span: the queue is standing. */
  queueWaitingMean: 1,
  /**
   * (suite) Share of the recent scrapes that see a request waiting: a standing queue, not the
   * bursts of a target whose loop is starved (bench/detection's clean runs at 4 streams).
   */
  queueStandingShare: 0.75,
  /**
   * Share of the server's own request time spent queued for a batch slot (its
   * `vllm:request_queue_time_seconds` over `vllm:e2e_request_latency_seconds`) at which users
   * feel a standing queue even with no SLO budget and no baseline to jump from (a run over
   * capacity from its first second). Our choice: a tenth, which a batch of B reaches with about
   * B/9 streams more than it (Little's law); checked on the simulator only.
   */
  queueTimeShare: 0.1,
  /**
   * (bench) Host CPU busy share of a generator window from which, with the engine thread's
   * event-loop delay P99 at the client-bound 50 ms, the host is starved and the client's clock
   * not trusted (`DiagnosisContext.clientLimited`): bench/detection's clean runs on a host at load
   * 10-40 showed 100 % busy with delays of 30-700 ms; the 0.95 mirrors the engine-thread
   * utilisation at which a window is client-bound (libs/load CLIENT_BOUND_THRESHOLDS).
   */
  starvedHostCpuBusy: 0.95,
  /** (suite) Tool calls needed, the share failing assertions, and the baseline's most. */
  assertionMinCalls: 5,
  assertionFailedShare: 0.2,
  assertionBaselineShare: 0.05,
} as const;
