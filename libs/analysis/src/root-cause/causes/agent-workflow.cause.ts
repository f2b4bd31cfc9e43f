import { minOf, maxOf, type RootCauseCause } from '@fathom/contracts';
import { PRUNING_LAMBDAS, WORKFLOW_JUDGE, pruningLambdaFor } from '@fathom/semantic';
import type { RecordDigest } from '../../evidence/record-digest';
import { CauseThresholds } from '../cause-thresholds.constant';
import { median, pct, type DiagnosisContext } from '../diagnosis.context';

type Stuck = 'oscillating' | 'deadlock';

/**
 * Multi-agent workflows (spec, anomaly class 5): oscillating intent graphs or wait-for cycles,
 * as the driver judged each workflow from the steps it observed (repeated intents; who held what
 * and waited for whom); a record without that judgement falls back to the status the target
 * reported ("workflow oscillating|deadlock ..."). The oscillation advice picks the spec's
 * pressure coefficient lambda that relieves within the time a stuck workflow lasted here.
 */
export function agentWorkflowCause(ctx: DiagnosisContext): RootCauseCause | null {
  const workflows = ctx.recent.digests.filter((d) => d.calls.some((c) => c.layer === 'agent'));
  const stuck: { d: RecordDigest; kind: Stuck; observed: boolean; error: string }[] = [];
  for (const d of workflows) {
    const error = d.calls.find((c) => c.layer === 'agent' && !c.ok)?.error ?? '';
    if (d.workflow && d.workflow.verdict !== 'undecided') {
      if (d.workflow.verdict !== 'converged')
        stuck.push({ d, kind: d.workflow.verdict, observed: true, error });
      continue;
    }
    const reported = /^workflow (oscillating|deadlock)\b/.exec(error)?.[1] as Stuck | undefined;
    if (reported) stuck.push({ d, kind: reported, observed: false, error });
  }
  if (
    workflows.length < CauseThresholds.agentMinWorkflows ||
    stuck.length / workflows.length < CauseThresholds.agentStuckShare
  )
    return null;
  const share = stuck.length / workflows.length;
  const deadlocks = stuck.filter((s) => s.kind === 'deadlock');
  const oscillating = stuck.filter((s) => s.kind === 'oscillating');
  const deadlocked = deadlocks.length > oscillating.length;
  const named = deadlocked ? deadlocks : oscillating;
  const observed = named.filter((s) => s.observed).length;
  const lasted = median(named.map((s) => s.d.e2eMs)) ?? 0;
  const lambda = pruningLambdaFor(lasted);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const judged = named.flatMap((s) => (s.d.workflow ? [s.d.workflow] : []));
  const recurrence = mean(judged.map((w) => w.recurrence));
  const score = mean(judged.map((w) => w.oscillationScore));
  const cycle = judged.find((w) => w.waitForCycle.length)?.waitForCycle ?? [];
  return {
    kind: deadlocked ? 'agent-deadlock' : 'agent-oscillation',
    title: deadlocked
      ? 'agents deadlock: workflows end in a wait-for cycle over shared resources'
      : "agents oscillate: workflows' intent graphs keep changing instead of converging",
    confidence: Math.min(1, 0.55 + 0.45 * share),
    since: minOf(stuck.map((s) => s.d.startedAt)),
    until: maxOf(stuck.map((s) => s.d.at)),
    evidence: [
      `${stuck.length}/${workflows.length} workflows (${pct(share)}) did not converge: ${oscillating.length} oscillating, ${deadlocks.length} deadlocked; ${observed}/${named.length} judged from the steps observed, the rest as the target reported`,
      ...(judged.length
        ? [
            deadlocked
              ? `wait-for cycle ${cycle.length ? cycle.join(' -> ') : 'n/a'}: each agent holds a resource the next one waits for`
              : `${pct(recurrence)} of agent moves return to the intent of two steps before (oscillating above ${pct(WORKFLOW_JUDGE.recurrenceShare)}, derived on the simulator); spec oscillation score ${score.toFixed(3)}`,
          ]
        : []),
      `example: ${named[0].error || `workflow ${named[0].kind}`}`,
    ],
    figures: {
      workflows: workflows.length,
      oscillating: oscillating.length,
      deadlocked: deadlocks.length,
      share,
      observedVerdicts: observed,
      workflowMedianMs: lasted,
      ...(judged.length && !deadlocked ? { recurrence, oscillationScore: score } : {}),
      ...(!deadlocked ? { pruningLambda: lambda.lambda } : {}),
    },
    ...(judged.length && !deadlocked
      ? {
          thresholds: [
            {
              name: 'share of agent moves returning to the intent of two steps before',
              value: WORKFLOW_JUDGE.recurrenceShare,
              source: 'simulator' as const,
              note: "set on the simulator's oscillating agents; the spec gives the score's formula, not a cut-off",
            },
          ],
        }
      : {}),
    advice: deadlocked
      ? [
          'acquire shared resources in one global order, or with timeouts, so no wait-for cycle can form',
          'fewer agents competing for the same resource per workflow',
        ]
      : [
          `prune low-confidence branches with the pressure coefficient lambda ${lambda.lambda} (spec: prunes ~${pct(lambda.prunedShare)} of branches, relief in ~${lambda.reliefMs} ms; a stuck workflow lasted ${lasted.toFixed(0)} ms here). The spec's table: ${PRUNING_LAMBDAS.map((p) => `${p.lambda} -> ${pct(p.prunedShare)}, ${p.reliefMs} ms`).join('; ')}`,
          'cap the steps per workflow and fall back to one agent when the intent change does not shrink',
        ],
  };
}
