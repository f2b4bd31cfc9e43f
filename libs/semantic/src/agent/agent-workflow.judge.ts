import { cosineSimilarity } from '../embedding/embedding-drift.util';
import {
  DeadlockDetector,
  oscillationScore,
  type AgentStep,
  type OscillationScore,
} from './agent-oscillation.detector';

/** One agent's state at one step, as a workflow's step line reports it (every field optional). */
export interface ObservedAgentState {
  readonly agent: string;
  /** Intent embedding after the step. */
  readonly intent?: readonly number[];
  readonly actionProbability?: number;
  readonly action?: string;
  /** Shared resources held after the step. */
  readonly holds?: readonly string[];
  /** The resource the agent waits for, if any. */
  readonly waitsFor?: string | null;
  readonly done?: boolean;
}

export interface ObservedStep {
  readonly step: number;
  readonly agents: readonly ObservedAgentState[];
}

export type WorkflowVerdictKind = 'converged' | 'oscillating' | 'deadlock' | 'undecided';

export interface WorkflowVerdict {
  readonly verdict: WorkflowVerdictKind;
  readonly steps: number;
  /** The spec's score (std-dev of the intent change x mean action probability). */
  readonly oscillation: OscillationScore;
  /**
   * Repeated states: of the agent steps that moved the intent away from the previous one, the
   * share that came back to the intent held two steps before (a plan flipping back and forth).
   */
  readonly recurrence: number;
  /** Agent steps judged for recurrence. */
  readonly recurrenceSteps: number;
  /** Agents that held a resource without progress for `WORKFLOW_JUDGE.stallSteps` steps. */
  readonly stalledAgents: readonly string[];
  readonly stalledFor: number;
  /** Agents on a wait-for cycle (who waits for a resource whom holds), in cycle order. */
  readonly waitForCycle: readonly string[];
  /** Consecutive steps, up to the last, that ended on a wait-for cycle. */
  readonly waitForCycleSteps: number;
  readonly meanActionProbability: number;
}

/**
 * Judge thresholds. Derived on the simulator's agents (libs/sim agents.service: converge,
 * oscillate, deadlock) in bench/detection; the spec gives the score's formula, not a cut-off.
 */
export const WORKFLOW_JUDGE = {
  /** Cosine distance to the previous intent that counts as moving away (derived on the simulator). */
  movedDistance: 0.2,
  /** Cosine distance to the intent two steps back that counts as coming back (derived on the simulator). */
  returnedDistance: 0.05,
  /** Share of moving agent steps that come back for a workflow to be oscillating (derived on the simulator). */
  recurrenceShare: 0.5,
  /** Agent steps that moved needed before recurrence is judged. */
  minRecurrenceSteps: 4,
  /** Steps without progress while holding a resource: DeadlockDetector's bound. */
  stallSteps: 5,
  /** Consecutive steps ending the workflow on a wait-for cycle: a cycle that persists is a deadlock. */
  cycleSteps: 2,
} as const;

/**
 * The spec's pressure coefficient lambda (anomaly class 5) and what it did in the source
 * document's table: the share of branches pruned and the time to relief.
 */
export const PRUNING_LAMBDAS = [
  { lambda: 0.01, prunedShare: 0.12, reliefMs: 890 },
  { lambda: 0.05, prunedShare: 0.47, reliefMs: 320 },
  { lambda: 0.1, prunedShare: 0.73, reliefMs: 110 },
] as const;

/**
 * The least pruning that relieves within `budgetMs` (e.g. how long a stuck workflow lasted):
 * the smallest lambda of the spec's table whose relief time fits, else the strongest.
 */
export function pruningLambdaFor(budgetMs: number): (typeof PRUNING_LAMBDAS)[number] {
  return PRUNING_LAMBDAS.find((p) => p.reliefMs <= budgetMs) ?? PRUNING_LAMBDAS[PRUNING_LAMBDAS.length - 1];
}

/**
 * Judges one multi-agent workflow from the steps the driver observed, not from the target's own
 * status: a deadlock is a wait-for cycle (who waits for a resource whom holds) that persists to the
 * end, or, when the steps say nothing of waits, resource holders stalled (`DeadlockDetector`); an oscillation is intents
 * that keep coming back to where they were two steps before (repeated states), with the spec's
 * `oscillationScore` as a figure; converged when every agent reported done; else undecided (also
 * when the steps carry neither intents nor resources).
 */
export function judgeAgentWorkflow(steps: readonly ObservedStep[]): WorkflowVerdict {
  const ordered = [...steps].sort((a, b) => a.step - b.step);
  const scoreSteps: AgentStep[] = [];
  const deadlocks = new DeadlockDetector(WORKFLOW_JUDGE.stallSteps);
  const intents = new Map<string, (readonly number[])[]>();
  const done = new Map<string, boolean>();
  let lastWaits: ObservedAgentState[] = [];
  let cycleRun = 0;
  for (const s of ordered) {
    for (const a of s.agents) {
      const wasDone = done.get(a.agent) ?? false;
      done.set(a.agent, a.done === true);
      if (a.intent?.length) {
        const list = intents.get(a.agent) ?? [];
        list.push(a.intent);
        intents.set(a.agent, list);
        scoreSteps.push({
          agentId: a.agent,
          step: s.step,
          intentEmbedding: a.intent,
          actionProbability: a.actionProbability ?? 0,
        });
      }
      deadlocks.observe({
        agentId: a.agent,
        step: s.step,
        heldResources: a.holds ?? [],
        progressed: a.action === 'execute' || (a.done === true && !wasDone),
      });
    }
    lastWaits = [...s.agents];
    cycleRun = waitForCycle(lastWaits).length ? cycleRun + 1 : 0;
  }
  let moved = 0;
  let returned = 0;
  for (const list of intents.values()) {
    for (let t = 2; t < list.length; t++) {
      if (distance(list[t], list[t - 1]) < WORKFLOW_JUDGE.movedDistance) continue;
      moved++;
      if (distance(list[t], list[t - 2]) <= WORKFLOW_JUDGE.returnedDistance) returned++;
    }
  }
  const recurrence = moved ? returned / moved : 0;
  const stall = deadlocks.verdict();
  const cycle = waitForCycle(lastWaits);
  const oscillation = oscillationScore(scoreSteps);
  const allDone = done.size > 0 && [...done.values()].every(Boolean);
  let verdict: WorkflowVerdictKind = 'undecided';
  const saysWhoWaits = lastWaits.some((a) => a.waitsFor !== undefined);
  if (cycleRun >= WORKFLOW_JUDGE.cycleSteps || (!saysWhoWaits && stall.deadlocked)) verdict = 'deadlock';
  else if (moved >= WORKFLOW_JUDGE.minRecurrenceSteps && recurrence >= WORKFLOW_JUDGE.recurrenceShare)
    verdict = 'oscillating';
  else if (allDone) verdict = 'converged';
  return {
    verdict,
    steps: ordered.length,
    oscillation,
    recurrence,
    recurrenceSteps: moved,
    stalledAgents: stall.stalledAgents,
    stalledFor: stall.stalledFor,
    waitForCycle: cycle,
    waitForCycleSteps: cycleRun,
    meanActionProbability: oscillation.meanActionProbability,
  };
}

function distance(a: readonly number[], b: readonly number[]): number {
  return 1 - cosineSimilarity(a, b);
}

/** A cycle in "agent waits for a resource another agent holds", or [] when there is none. */
function waitForCycle(agents: readonly ObservedAgentState[]): string[] {
  const holder = new Map<string, string>();
  for (const a of agents) for (const r of a.holds ?? []) holder.set(r, a.agent);
  const next = new Map<string, string>();
  for (const a of agents) {
    const h = a.waitsFor ? holder.get(a.waitsFor) : undefined;
    if (h !== undefined && h !== a.agent) next.set(a.agent, h);
  }
  for (const start of next.keys()) {
    const path: string[] = [];
    const seen = new Set<string>();
    let at: string | undefined = start;
    while (at !== undefined && !seen.has(at)) {
      seen.add(at);
      path.push(at);
      at = next.get(at);
    }
    if (at !== undefined) return path.slice(path.indexOf(at));
  }
  return [];
}

/** Bounds on what one step line may contribute: a target's answer is untrusted. */
const STEP_LIMITS = { agents: 64, intentDims: 1024, holds: 16, nameChars: 64 } as const;

/**
 * One step line (`{"type":"step","step":n,"agents":[...]}`, as parsed JSON) as an observed step,
 * keeping only well-typed fields within bounds; null when it names no agents.
 */
export function observedStepOf(line: unknown, fallbackStep: number): ObservedStep | null {
  if (typeof line !== 'object' || line === null) return null;
  const raw = line as { step?: unknown; agents?: unknown };
  if (!Array.isArray(raw.agents)) return null;
  const name = (v: unknown) => (typeof v === 'string' ? v.slice(0, STEP_LIMITS.nameChars) : undefined);
  const agents: ObservedAgentState[] = [];
  for (const a of raw.agents.slice(0, STEP_LIMITS.agents)) {
    if (typeof a !== 'object' || a === null) continue;
    const r = a as Record<string, unknown>;
    const agent = name(r.agent);
    if (agent === undefined) continue;
    const intent =
      Array.isArray(r.intent) && r.intent.length <= STEP_LIMITS.intentDims && r.intent.every(Number.isFinite)
        ? (r.intent as number[])
        : undefined;
    const holds = Array.isArray(r.holds)
      ? r.holds.slice(0, STEP_LIMITS.holds).flatMap((h) => (typeof h === 'string' ? [name(h)!] : []))
      : undefined;
    agents.push({
      agent,
      ...(intent ? { intent } : {}),
      ...(typeof r.actionProbability === 'number' && Number.isFinite(r.actionProbability)
        ? { actionProbability: r.actionProbability }
        : {}),
      ...(typeof r.action === 'string' ? { action: name(r.action) } : {}),
      ...(holds ? { holds } : {}),
      ...(r.waitsFor === null || typeof r.waitsFor === 'string'
        ? { waitsFor: name(r.waitsFor) ?? null }
        : {}),
      ...(typeof r.done === 'boolean' ? { done: r.done } : {}),
    });
  }
  if (!agents.length) return null;
  const step = typeof raw.step === 'number' && Number.isFinite(raw.step) ? raw.step : fallbackStep;
  return { step, agents };
}
