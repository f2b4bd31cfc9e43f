import { cosineSimilarity } from '../embedding/embedding-drift.util';

/** One agent's state at one step of a multi-agent run. */
export interface AgentStep {
  agentId: string;
  step: number;
  /** Embedding of the agent's stated intent at this step (any fixed dimension). */
  intentEmbedding: ArrayLike<number>;
  /** Probability (confidence) of the action it took, 0..1: the edge weight in the intent graph. */
  actionProbability: number;
}

export interface OscillationScore {
  /** std-dev of the per-agent intent change between consecutive steps x mean action probability. */
  score: number;
  intentChangeStdDev: number;
  meanActionProbability: number;
  /** Intent changes the std-dev was taken over (consecutive step pairs of the same agent). */
  transitions: number;
}

/**
 * Spec, anomaly class 5: "Score = std-dev of the per-agent intent-embedding change between
 * steps x mean action probability over the graph's edges". The change between two steps is the
 * cosine distance 1 - cos(e_t, e_t+1) (0..2), so the score does not depend on the embedding's
 * scale. Agents that flip between two intents with confidence give a high score; agents that
 * drift steadily (every change alike) give a low one.
 */
export function oscillationScore(steps: readonly AgentStep[]): OscillationScore {
  const byAgent = new Map<string, AgentStep[]>();
  for (const s of steps) {
    const list = byAgent.get(s.agentId);
    if (list === undefined) byAgent.set(s.agentId, [s]);
    else list.push(s);
  }
  const changes: number[] = [];
  for (const list of byAgent.values()) {
    list.sort((a, b) => a.step - b.step);
    for (let i = 1; i < list.length; i++)
      changes.push(cosineDistance(list[i - 1].intentEmbedding, list[i].intentEmbedding));
  }
  const meanActionProbability =
    steps.length === 0 ? 0 : steps.reduce((s, x) => s + x.actionProbability, 0) / steps.length;
  if (changes.length === 0) return { score: 0, intentChangeStdDev: 0, meanActionProbability, transitions: 0 };
  const mean = changes.reduce((a, b) => a + b, 0) / changes.length;
  const variance = changes.reduce((a, b) => a + (b - mean) ** 2, 0) / changes.length;
  const sd = Math.sqrt(variance);
  return {
    score: sd * meanActionProbability,
    intentChangeStdDev: sd,
    meanActionProbability,
    transitions: changes.length,
  };
}

function cosineDistance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  // Two zero vectors have not moved apart; a zero vector against any other has no direction.
  const zeroA = isZero(a);
  const zeroB = isZero(b);
  if (zeroA || zeroB) return zeroA && zeroB ? 0 : 1;
  return 1 - cosineSimilarity(a, b);
}

function isZero(v: ArrayLike<number>): boolean {
  for (let i = 0; i < v.length; i++) if (v[i] !== 0) return false;
  return true;
}

/** What one agent holds and whether it moved forward at one step. */
export interface AgentProgress {
  agentId: string;
  step: number;
  /** Shared resources the agent holds after this step (locks, tool slots, documents). */
  heldResources: readonly string[];
  /** The step completed a task or changed durable state. */
  progressed: boolean;
}

export interface DeadlockVerdict {
  deadlocked: boolean;
  /** Agents with no progress for `stallSteps` steps while holding at least one resource. */
  stalledAgents: string[];
  /** Resources those agents hold. */
  heldResources: string[];
  /** Longest run of steps without progress among the stalled agents. */
  stalledFor: number;
}

/**
 * Deadlock: every agent that holds a shared resource has made no progress for `stallSteps`
 * consecutive steps (and at least one such agent exists), or at least two stalled holders wait
 * on each other. Feed steps in order; O(agents) a step. Single owner.
 */
export class DeadlockDetector {
  private readonly agents = new Map<string, { sinceProgress: number; held: readonly string[] }>();

  constructor(private readonly stallSteps = 5) {}

  observe(progress: AgentProgress): DeadlockVerdict {
    const state = this.agents.get(progress.agentId) ?? { sinceProgress: 0, held: [] };
    state.sinceProgress = progress.progressed ? 0 : state.sinceProgress + 1;
    state.held = progress.heldResources;
    this.agents.set(progress.agentId, state);
    return this.verdict();
  }

  verdict(): DeadlockVerdict {
    const stalled: string[] = [];
    const held = new Set<string>();
    let holders = 0;
    let stalledFor = 0;
    for (const [agentId, s] of this.agents) {
      if (s.held.length === 0) continue;
      holders++;
      if (s.sinceProgress >= this.stallSteps) {
        stalled.push(agentId);
        for (const r of s.held) held.add(r);
        stalledFor = Math.max(stalledFor, s.sinceProgress);
      }
    }
    const deadlocked = stalled.length > 0 && (stalled.length === holders || stalled.length >= 2);
    return { deadlocked, stalledAgents: stalled.sort(), heldResources: [...held].sort(), stalledFor };
  }
}
