import type { SimConfig } from '../config/sim-config';
import type { FaultController } from '../faults/fault.controller';
import { Prng } from '../text/prng.util';

export type AgentMode = SimConfig['agents']['mode'];

export interface AgentStepState {
  agent: string;
  /** Intent embedding (unit vector) after this step. */
  intent: number[];
  /** L2 change of the intent since the previous step. */
  intentDelta: number;
  action: string;
  actionProbability: number;
  holds: string[];
  waitsFor: string | null;
  done: boolean;
}

export interface AgentRunResult {
  mode: AgentMode;
  status: 'completed' | 'incomplete' | 'oscillating' | 'deadlock';
  /** `elapsedMs`: wall ms from the start of the run to the end of the step (server side). */
  steps: AgentRunStep[];
  /** Mean intent change per agent per step over the second half of the run (~0 when settled). */
  meanIntentDeltaLate: number;
  /** Agents on the wait-for cycle (deadlock only). */
  cycle: string[];
}

export interface AgentRunStep {
  step: number;
  elapsedMs: number;
  agents: AgentStepState[];
}

const INTENT_DIMS = 8;

function unit(rng: Prng): number[] {
  const v = Array.from({ length: INTENT_DIMS }, () => rng.normal());
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

/**
 * Agents contending for shared resources. Each agent needs its own resource and its
 * neighbour's (agent i: r_i and r_{(i+1) mod n}).
 *  converge:  resources are taken in global order (no circular wait); intents settle and every
 *             agent finishes.
 *  oscillate: agents grab, see contention, back off and switch plan every step (livelock); the
 *             intent flips between two directions and nobody finishes.
 *  deadlock:  each agent holds its own resource and waits for its neighbour's: a wait-for cycle.
 * The agent_oscillation / agent_deadlock faults override the configured mode at run time.
 */
export class AgentsService {
  constructor(
    private readonly config: SimConfig['agents'],
    private readonly faults: FaultController,
    private readonly seed: number,
    private readonly timeScale: number,
  ) {}

  mode(): AgentMode {
    if (this.faults.get('agent_deadlock')) return 'deadlock';
    if (this.faults.get('agent_oscillation')) return 'oscillate';
    return this.config.mode;
  }

  /** `onStep` sees each step as it ends (the streaming endpoint writes it out at once). */
  async run(
    agentCount: number,
    stepCount: number,
    onStep?: (step: AgentRunStep) => void,
  ): Promise<AgentRunResult> {
    const mode = this.mode();
    const startedAt = performance.now();
    const rng = new Prng(this.seed ^ (agentCount * 7919 + stepCount));
    const names = Array.from({ length: agentCount }, (_, i) => `agent-${i}`);
    const goal = names.map(() => unit(rng));
    const alt = names.map(() => unit(rng));
    let intent = names.map(() => unit(rng));
    const done = names.map(() => false);
    const steps: AgentRunResult['steps'] = [];
    const deltas: number[] = [];
    for (let step = 0; step < stepCount; step++) {
      const states: AgentStepState[] = [];
      const next: number[][] = [];
      for (let i = 0; i < agentCount; i++) {
        const own = `r${i}`;
        const neighbour = `r${(i + 1) % agentCount}`;
        let target: number[];
        let action: string;
        let probability: number;
        let holds: string[] = [];
        let waitsFor: string | null = null;
        if (mode === 'converge') {
          // Move 60 % of the way to the goal each step; finish once the plan is stable.
          target = intent[i].map((x, d) => x + 0.6 * (goal[i][d] - x));
          // Global resource order: agent i runs (holding both its resources) at step i.
          action = done[i] ? 'idle' : step === i ? 'execute' : 'wait';
          probability = 0.6 + 0.35 * Math.min(1, step / agentCount);
          if (step === i) {
            holds = [own, neighbour].sort();
            done[i] = true;
          }
        } else if (mode === 'oscillate') {
          const flip = (step + i) % 2 === 0;
          target = (flip ? goal[i] : alt[i]).map((x) => x + rng.normal(0, 0.02));
          action = flip ? 'acquire' : 'release';
          probability = 0.45 + rng.next() * 0.1;
          holds = flip ? [own] : [];
        } else {
          target = intent[i];
          action = 'wait';
          probability = 0.9;
          holds = [own];
          waitsFor = neighbour;
        }
        const norm = Math.hypot(...target) || 1;
        target = target.map((x) => x / norm);
        const delta = Math.hypot(...target.map((x, d) => x - intent[i][d]));
        deltas.push(delta);
        next.push(target);
        states.push({
          agent: names[i],
          intent: target,
          intentDelta: delta,
          action,
          actionProbability: probability,
          holds,
          waitsFor,
          done: done[i],
        });
      }
      intent = next;
      if (this.config.stepMs > 0)
        await new Promise((resolve) => setTimeout(resolve, this.config.stepMs * this.timeScale));
      const ended: AgentRunStep = { step, elapsedMs: performance.now() - startedAt, agents: states };
      steps.push(ended);
      onStep?.(ended);
      if (mode === 'converge' && done.every(Boolean)) break;
    }
    const late = deltas.slice(Math.floor(deltas.length / 2));
    const converged = done.every(Boolean);
    return {
      mode,
      status:
        mode === 'deadlock'
          ? 'deadlock'
          : mode === 'oscillate'
            ? 'oscillating'
            : converged
              ? 'completed'
              : 'incomplete',
      steps,
      meanIntentDeltaLate: late.reduce((a, b) => a + b, 0) / Math.max(1, late.length),
      cycle: mode === 'deadlock' ? names : [],
    };
  }
}
