import { Detectors, minOf, maxOf, pushTo, type RootCauseCause } from '@fathom/contracts';
import {
  schemaDriftFindings,
  toolContractRatesFromSummary,
  toolVersionKey,
  type SchemaDriftFinding,
} from '../../evidence/tool-drift';
import { CauseThresholds } from '../cause-thresholds.constant';
import { pct, type DiagnosisContext } from '../diagnosis.context';

/** Confidence of a drift whose changes break no reader (an added field): named, ranked low. */
const NON_BREAKING_DRIFT_CONFIDENCE = 0.35;
/** Drifted paths spelled out per tool version in a cause's evidence. */
const DRIFT_PATHS_IN_EVIDENCE = 8;

/**
 * Tool schema drift (spec, anomaly class 4) from both kinds of evidence:
 * - the semantic-monitor's `schema-drift` signals (a declared contract against the answers: tool,
 *   version, path, change), weighed by how many answers of that version broke their contract
 *   in the recent span (the analyzer's own verdicts on the records' tool calls; the monitor's
 *   run-wide pass rate when no recent answer was judged). A breaking drift whose recent answers
 *   all pass again is over and not named anew;
 * - failed response assertions of HTTP steps on a tool against the baseline (contracts that are
 *   asserted, not declared).
 * One cause: the stronger evidence sets the confidence, both are listed.
 */
export function toolSchemaDriftCause(ctx: DiagnosisContext): RootCauseCause | null {
  const { timeline, recent, base, nowMs, calls } = ctx;
  const evidence: string[] = [];
  const figures: Record<string, number> = {};
  const titles: string[] = [];
  let confidence = 0;
  let since = Infinity;
  let until = -Infinity;

  // Drift signals, grouped by tool version.
  const findings = schemaDriftFindings(
    timeline.detectorsOf(Detectors.schemaDrift).filter((s) => s.emittedAt <= nowMs),
  );
  const groups = new Map<string, SchemaDriftFinding[]>();
  for (const f of findings) pushTo(groups, toolVersionKey(f.tool, f.version), f);
  const runWide = new Map(
    toolContractRatesFromSummary(timeline.detectorsOf(Detectors.semanticGoodput)).map((r) => [
      toolVersionKey(r.tool, r.version),
      r,
    ]),
  );
  const recentS = ((recent.toMs - recent.fromMs) / 1000).toFixed(1);
  for (const [key, paths] of groups) {
    const { tool, version } = paths[0];
    const answers = recent.digests.flatMap((d) =>
      (d.toolCalls ?? [])
        .filter((c) => toolVersionKey(c.tool, c.version) === key)
        .map((c) => ({ ...c, at: d.at, startedAt: d.startedAt })),
    );
    const judged = answers.filter((c) => c.contractPassed !== null);
    const broken = judged.filter((c) => c.contractPassed === false);
    const wide = runWide.get(key);
    const brokenShare = judged.length
      ? broken.length / judged.length
      : wide?.contractPassRate != null
        ? 1 - wide.contractPassRate
        : null;
    const breaking = paths.filter((p) => p.breaking);
    // A breaking drift no recent answer shows any more is over; one with no answer to judge
    // stands on the signal (at least the answer that raised it broke).
    if (breaking.length && brokenShare === 0) continue;
    const score = breaking.length ? 0.6 + 0.4 * (brokenShare ?? 0) : NON_BREAKING_DRIFT_CONFIDENCE;
    confidence = Math.max(confidence, score);
    const name = `${tool} ${version}`;
    titles.push(`${name} (${[...new Set(paths.map((p) => `${p.path} ${p.change}`))].join(', ')})`);
    evidence.push(
      judged.length
        ? `${name}: ${broken.length}/${judged.length} answers in the last ${recentS} s (${pct(brokenShare!)}) break the declared contract (contract pass rate ${pct(1 - brokenShare!)})`
        : `${name}: no answer judged in the last ${recentS} s${brokenShare !== null ? `; run-wide contract pass rate ${pct(1 - brokenShare)} (semantic-monitor)` : ''}`,
    );
    for (const p of paths.slice(0, DRIFT_PATHS_IN_EVIDENCE))
      evidence.push(`${name} ${p.path} ${p.change}${p.breaking ? '' : ' (breaks no reader)'}: ${p.detail}`);
    if (paths.length > DRIFT_PATHS_IN_EVIDENCE)
      evidence.push(`${name}: ${paths.length - DRIFT_PATHS_IN_EVIDENCE} more drifted paths`);
    const fallbacks = answers.filter((c) => c.fallback);
    if (fallbacks.length && broken.some((c) => c.fallback))
      evidence.push(
        `${name} answers as the fallback instance and breaks too: falling back to it does not help`,
      );
    if (wide && judged.length)
      evidence.push(
        `${name} run-wide (semantic-monitor): contract pass rate ${wide.contractPassRate === null ? 'n/a' : pct(wide.contractPassRate)}, fallback trigger rate ${pct(wide.fallbackTriggerRate)} over ${wide.calls} calls`,
      );
    const prefix = `tool.${tool}@${version}.`;
    figures[`${prefix}driftedPaths`] = paths.length;
    figures[`${prefix}breakingPaths`] = breaking.length;
    figures[`${prefix}judgedCalls`] = judged.length;
    figures[`${prefix}brokenCalls`] = broken.length;
    if (brokenShare !== null) figures[`${prefix}contractPassRate`] = 1 - brokenShare;
    if (answers.length)
      figures[`${prefix}fallbackTriggerRate`] =
        answers.filter((c) => c.fallbackTriggered).length / answers.length;
    since = Math.min(since, minOf(paths.map((p) => p.at)), minOf(broken.map((c) => c.startedAt)));
    until = Math.max(until, maxOf(paths.map((p) => p.at)), maxOf(broken.map((c) => c.at)));
  }

  // Failed response assertions on tool steps, judged against the baseline.
  const toolCalls = calls.filter((c) => c.layer.startsWith('tool:'));
  const contractBroken = toolCalls.filter((c) => c.assertionFailed);
  const baseTool = base
    ? base.digests.flatMap((d) => d.calls.filter((c) => c.layer.startsWith('tool:')))
    : [];
  const baseBroken = baseTool.filter((c) => c.assertionFailed).length / Math.max(1, baseTool.length);
  if (
    toolCalls.length >= CauseThresholds.assertionMinCalls &&
    contractBroken.length / toolCalls.length >= CauseThresholds.assertionFailedShare &&
    baseBroken < CauseThresholds.assertionBaselineShare
  ) {
    const share = contractBroken.length / toolCalls.length;
    const tools = [...new Set(contractBroken.map((c) => c.layer.slice(5)))];
    confidence = Math.max(confidence, 0.6 + 0.4 * share);
    titles.push(`${tools.join(', ')} (response assertions that passed before fail)`);
    evidence.push(
      `${contractBroken.length}/${toolCalls.length} tool calls (${pct(share)}) fail their response assertions, baseline ${pct(baseBroken)}`,
      `example: ${contractBroken[0].error ?? 'assertion failed'}`,
    );
    Object.assign(figures, {
      broken: contractBroken.length,
      calls: toolCalls.length,
      share,
      baselineShare: baseBroken,
    });
    since = Math.min(since, minOf(contractBroken.map((c) => c.startedAt)));
    until = Math.max(until, maxOf(contractBroken.map((c) => c.at)));
  }

  if (!titles.length) return null;
  return {
    kind: 'tool-schema-drift',
    title: `tool contract drifted: ${titles.join('; ')}`,
    confidence: Math.min(1, confidence),
    since,
    until,
    evidence,
    figures,
    advice: [
      "route callers whose contract broke to the previous compatible tool version (spec: fall back to v1.9 with a timeout 200 ms above the main path's 800 ms) until the contract is fixed",
      "diff the tool's OpenAPI response schema against the last good one, pin the contract in a test and generate boundary cases for the drifted paths",
    ],
  };
}
