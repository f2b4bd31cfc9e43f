import { Detectors } from '@fathom/contracts';
import type { DetectorSignal } from '@fathom/contracts';
import { normalizeToolVersion } from '@fathom/semantic';
import type { RecordDigest } from './record-digest';

/** One drifted path of one tool version, as a `schema-drift` signal names it. */
export interface SchemaDriftFinding {
  /** Epoch ms when the monitor raised it. */
  readonly at: number;
  readonly tool: string;
  readonly version: string;
  /** JSON path in the notation of `@fathom/semantic`'s schema diff (`$.temp_c`, `$.items[].sku`). */
  readonly path: string;
  /** `type-changed`, `required-added`, `required-removed`, `property-added`, `enum-widened`. */
  readonly change: string;
  /** The change breaks a reader written against the contract (critical signal). */
  readonly breaking: boolean;
  /** What was declared and what came, e.g. `declared number, observed string`. */
  readonly detail: string;
}

/** Contract pass and fallback trigger rates of one tool version. */
export interface ToolContractRates {
  readonly tool: string;
  readonly version: string;
  readonly calls: number;
  /** Calls judged against a declared contract (the pass rate's denominator). */
  readonly checked: number;
  /** null when no call was judged. */
  readonly contractPassRate: number | null;
  readonly fallbackTriggerRate: number;
}

/** Same tool and version, whether it was written `v1.9` or `1.9`. */
export function toolVersionKey(tool: string, version: string): string {
  return `${tool}\u0000${normalizeToolVersion(version)}`;
}

/**
 * The drift findings among detector signals, oldest first. A signal without the tool and
 * version labels (a monitor older than the labels) names nothing to act on and is left out.
 */
export function schemaDriftFindings(signals: readonly DetectorSignal[]): SchemaDriftFinding[] {
  const out: SchemaDriftFinding[] = [];
  for (const s of signals) {
    if (s.detector !== Detectors.schemaDrift) continue;
    const tool = s.labels?.tool;
    const version = s.labels?.version;
    if (!tool || !version) continue;
    // The watch's message ends in "(<what was declared, what came>)".
    const detail = /\(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*$/.exec(s.message)?.[1] ?? s.message;
    out.push({
      at: s.emittedAt,
      tool,
      version,
      path: s.labels?.path ?? '$',
      change: s.labels?.change ?? 'unknown',
      breaking: s.figures.breaking === undefined ? s.severity === 'critical' : s.figures.breaking === 1,
      detail,
    });
  }
  return out.sort((a, b) => a.at - b.at);
}

const SUMMARY_KEY = /^tool\.(.+)@([^@]+)\.(calls|checked|contractPassRate|fallbackTriggerRate)$/;

/**
 * Per tool version, the run-wide rates of the semantic-monitor's goodput summary
 * (`tool.<name>@<version>.<figure>`); empty before the summary arrived (it comes at the run's end).
 */
export function toolContractRatesFromSummary(signals: readonly DetectorSignal[]): ToolContractRates[] {
  const summary = [...signals]
    .filter((s) => s.detector === Detectors.semanticGoodput)
    .sort((a, b) => b.emittedAt - a.emittedAt)[0];
  if (!summary) return [];
  const byVersion = new Map<string, { tool: string; version: string; figures: Record<string, number> }>();
  for (const [key, value] of Object.entries(summary.figures)) {
    const m = SUMMARY_KEY.exec(key);
    if (!m) continue;
    const id = `${m[1]}\u0000${m[2]}`;
    let entry = byVersion.get(id);
    if (!entry) byVersion.set(id, (entry = { tool: m[1], version: m[2], figures: {} }));
    entry.figures[m[3]] = value;
  }
  return [...byVersion.values()].map(({ tool, version, figures }) => ({
    tool,
    version,
    calls: figures.calls ?? 0,
    checked: figures.checked ?? 0,
    contractPassRate: figures.contractPassRate ?? null,
    fallbackTriggerRate: figures.fallbackTriggerRate ?? 0,
  }));
}

/** Per tool version, the counts of the analyzer's own verdicts on tool calls (`addToolCalls`). */
export type ToolCallCounts = Map<
  string,
  { tool: string; version: string; calls: number; checked: number; passed: number; fallbacks: number }
>;

/** Counts one digest's tool calls. */
export function addToolCalls(counts: ToolCallCounts, d: RecordDigest): void {
  for (const c of d.toolCalls ?? []) {
    const key = `${c.tool}\u0000${c.version}`;
    let n = counts.get(key);
    if (!n)
      counts.set(
        key,
        (n = { tool: c.tool, version: c.version, calls: 0, checked: 0, passed: 0, fallbacks: 0 }),
      );
    n.calls++;
    if (c.contractPassed !== null) n.checked++;
    if (c.contractPassed === true) n.passed++;
    if (c.fallbackTriggered) n.fallbacks++;
  }
}

/** Per tool version, the rates of the counted tool calls (the analyzer's own verdicts). */
export function toolContractRatesOf(counts: ToolCallCounts): ToolContractRates[] {
  return [...counts.values()].map((n) => ({
    tool: n.tool,
    version: n.version,
    calls: n.calls,
    checked: n.checked,
    contractPassRate: n.checked === 0 ? null : n.passed / n.checked,
    fallbackTriggerRate: n.fallbacks / n.calls,
  }));
}
