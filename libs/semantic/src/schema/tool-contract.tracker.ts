/** One tool call as the load engine saw it. */
export interface ToolCallOutcome {
  tool: string;
  /** Version that answered (e.g. from `x-tool-version`, or the contract), `unknown` if none. */
  version: string;
  /**
   * The response satisfied the declared contract (no schema violation); null when it could not
   * be judged (no contract declared for this version, or the call got no answer to judge).
   */
  contractPassed: boolean | null;
  /** The call was routed to the fallback instance (spec: v2.1 incompatible -> v1.9). */
  fallbackTriggered: boolean;
}

export interface ToolContractStats {
  tool: string;
  version: string;
  calls: number;
  /** Calls judged against a declared contract: the denominator of `contractPassRate`. */
  checked: number;
  /** null when no call was judged. */
  contractPassRate: number | null;
  fallbackTriggerRate: number;
}

/**
 * Fallback trigger rate and contract pass rate per tool and version (spec, anomaly class 4:
 * "report fallback trigger rate and contract-pass rate per dimension"). Counters only; O(1) a
 * call. Single owner.
 */
export class ToolContractTracker {
  private readonly counts = new Map<
    string,
    { tool: string; version: string; calls: number; checked: number; passed: number; fallbacks: number }
  >();

  record(outcome: ToolCallOutcome): void {
    const key = `${outcome.tool}\u0000${outcome.version}`;
    let c = this.counts.get(key);
    if (c === undefined) {
      c = { tool: outcome.tool, version: outcome.version, calls: 0, checked: 0, passed: 0, fallbacks: 0 };
      this.counts.set(key, c);
    }
    c.calls++;
    if (outcome.contractPassed !== null) c.checked++;
    if (outcome.contractPassed === true) c.passed++;
    if (outcome.fallbackTriggered) c.fallbacks++;
  }

  stats(): ToolContractStats[] {
    return [...this.counts.values()]
      .map((c) => ({
        tool: c.tool,
        version: c.version,
        calls: c.calls,
        checked: c.checked,
        contractPassRate: c.checked === 0 ? null : c.passed / c.checked,
        fallbackTriggerRate: c.fallbacks / c.calls,
      }))
      .sort((a, b) => a.tool.localeCompare(b.tool) || a.version.localeCompare(b.version));
  }
}
