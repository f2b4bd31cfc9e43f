import type { RootCauseCause } from '@fathom/contracts';
import { CauseThresholds } from '../cause-thresholds.constant';
import { pct, type DiagnosisContext } from '../diagnosis.context';

/** Multi-agent workflows (spec, anomaly class 5): oscillating intent graphs or wait-for cycles. */
export function agentWorkflowCause(ctx: DiagnosisContext): RootCauseCause | null {
  const agent = ctx.calls.filter((c) => c.layer === 'agent');
  const stuck = agent.filter((c) => !c.ok && /^workflow (oscillating|deadlock)\b/.test(c.error ?? ''));
  if (
    agent.length < CauseThresholds.agentMinWorkflows ||
    stuck.length / agent.length < CauseThresholds.agentStuckShare
  )
    return null;
  const share = stuck.length / agent.length;
  const deadlocks = stuck.filter((c) => c.error!.startsWith('workflow deadlock'));
  const oscillating = stuck.length - deadlocks.length;
  const deadlocked = deadlocks.length > oscillating;
  return {
    kind: deadlocked ? 'agent-deadlock' : 'agent-oscillation',
    title: deadlocked
      ? 'agents deadlock: workflows end in a wait-for cycle over shared resources'
      : "agents oscillate: workflows' intent graphs keep changing instead of converging",
    confidence: Math.min(1, 0.55 + 0.45 * share),
    since: Math.min(...stuck.map((c) => c.startedAt)),
    until: Math.max(...stuck.map((c) => c.at)),
    evidence: [
      `${stuck.length}/${agent.length} workflows (${pct(share)}) did not converge: ${oscillating} oscillating, ${deadlocks.length} deadlocked`,
      `example: ${(deadlocked ? deadlocks[0] : stuck.find((c) => !c.error!.startsWith('workflow deadlock'))!).error}`,
    ],
    figures: { workflows: agent.length, oscillating, deadlocked: deadlocks.length, share },
    advice: deadlocked
      ? [
          'acquire shared resources in one global order, or with timeouts, so no wait-for cycle can form',
          'fewer agents competing for the same resource per workflow',
        ]
      : [
          'prune low-confidence branches with a pressure coefficient (spec: lambda 0.05 prunes ~47 % and relieves in ~320 ms)',
          'cap the steps per workflow and fall back to one agent when the intent change does not shrink',
        ],
  };
}
