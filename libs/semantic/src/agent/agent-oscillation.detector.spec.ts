import { DeadlockDetector, oscillationScore, type AgentStep } from './agent-oscillation.detector';

const A = [1, 0, 0];
const B = [0, 1, 0];

function run(agent: string, intents: number[][], p: number): AgentStep[] {
  return intents.map((e, step) => ({ agentId: agent, step, intentEmbedding: e, actionProbability: p }));
}

describe(oscillationScore.name, () => {
  it('scores an agent flipping between intents above one that holds its intent', () => {
    const flipping = oscillationScore(run('a', [A, B, B, A, A, B, B, A], 0.9));
    const steady = oscillationScore(run('a', [A, A, A, A, A, A, A, A], 0.9));
    // Changes 1,0,1,0,1,0,1: mean 4/7, population sd sqrt(12)/7.
    expect(flipping.score).toBeCloseTo((Math.sqrt(12) / 7) * 0.9, 10);
    expect(steady.score).toBe(0);
    expect(flipping.transitions).toBe(7);
  });

  it('scales with the mean action probability and ignores step order of arrival', () => {
    const steps = run('a', [A, B, A, A], 0.5).reverse();
    const sut = oscillationScore([...steps, ...run('b', [A, A], 0.5)]);
    expect(sut.meanActionProbability).toBe(0.5);
    expect(sut.transitions).toBe(4);
  });
});

describe(DeadlockDetector.name, () => {
  it('reports a deadlock when resource holders make no progress for N steps', () => {
    const sut = new DeadlockDetector(3);
    let verdict = sut.observe({ agentId: 'a', step: 0, heldResources: ['db'], progressed: true });
    for (let step = 1; step <= 3; step++) {
      sut.observe({ agentId: 'a', step, heldResources: ['db'], progressed: false });
      verdict = sut.observe({ agentId: 'b', step, heldResources: ['index'], progressed: false });
    }
    expect(verdict).toEqual({
      deadlocked: true,
      stalledAgents: ['a', 'b'],
      heldResources: ['db', 'index'],
      stalledFor: 3,
    });
  });

  it('does not call an idle agent without resources, or a progressing one, deadlocked', () => {
    const sut = new DeadlockDetector(3);
    let verdict = sut.verdict();
    for (let step = 0; step < 10; step++) {
      sut.observe({ agentId: 'idle', step, heldResources: [], progressed: false });
      verdict = sut.observe({ agentId: 'worker', step, heldResources: ['db'], progressed: step % 2 === 0 });
    }
    expect(verdict.deadlocked).toBe(false);
  });
});
