import {
  judgeAgentWorkflow,
  observedStepOf,
  pruningLambdaFor,
  type ObservedStep,
} from './agent-workflow.judge';

const GOAL = [
  [1, 0, 0, 0],
  [0, 1, 0, 0],
  [0, 0, 1, 0],
];
const ALT = [
  [0, 0, 0, 1],
  [0, 0, 1, 0],
  [1, 0, 0, 0],
];
const norm = (v: number[]) => {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};

/** Three agents over `n` steps; `state(i, step)` says what agent i reported. */
function steps(
  n: number,
  state: (i: number, step: number) => Omit<ObservedStep['agents'][number], 'agent'>,
): ObservedStep[] {
  return Array.from({ length: n }, (_, step) => ({
    step,
    agents: [0, 1, 2].map((i) => ({ agent: `agent-${i}`, ...state(i, step) })),
  }));
}

describe(judgeAgentWorkflow.name, () => {
  it('calls a workflow oscillating when intents keep returning to where they were two steps before', () => {
    const sut = judgeAgentWorkflow(
      steps(12, (i, step) => ({
        intent: (step + i) % 2 === 0 ? GOAL[i] : ALT[i],
        actionProbability: 0.5,
        action: (step + i) % 2 === 0 ? 'acquire' : 'release',
        holds: (step + i) % 2 === 0 ? [`r${i}`] : [],
        waitsFor: null,
        done: false,
      })),
    );
    expect(sut.verdict).toBe('oscillating');
    expect(sut.recurrence).toBe(1);
    expect(sut.recurrenceSteps).toBe(30);
    expect(sut.oscillation.transitions).toBe(33);
  });

  it('calls a workflow deadlocked when resource holders stall on a wait-for cycle, naming the cycle', () => {
    const sut = judgeAgentWorkflow(
      steps(8, (i) => ({
        intent: GOAL[i],
        actionProbability: 0.9,
        action: 'wait',
        holds: [`r${i}`],
        waitsFor: `r${(i + 1) % 3}`,
        done: false,
      })),
    );
    expect(sut.verdict).toBe('deadlock');
    expect(sut.waitForCycle).toEqual(['agent-0', 'agent-1', 'agent-2']);
    expect(sut.stalledAgents).toEqual(['agent-0', 'agent-1', 'agent-2']);
    expect(sut.stalledFor).toBe(8);
  });

  it('calls a workflow converged when intents settle and every agent finishes', () => {
    let intent = [norm([1, 1, 1, 1]), norm([1, -1, 1, 1]), norm([-1, 1, 1, 1])];
    const sut = judgeAgentWorkflow(
      steps(4, (i, step) => {
        if (i === 0) intent = intent.map((v, k) => norm(v.map((x, d) => x + 0.6 * (GOAL[k][d] - x))));
        return {
          intent: intent[i],
          actionProbability: 0.8,
          action: step === i ? 'execute' : 'wait',
          holds: step === i ? [`r${i}`, `r${(i + 1) % 3}`] : [],
          waitsFor: null,
          done: step >= i,
        };
      }),
    );
    expect(sut.verdict).toBe('converged');
    expect(sut.recurrence).toBe(0);
  });

  it('stays undecided on steps that carry neither intents nor resources, or too few steps', () => {
    expect(judgeAgentWorkflow(steps(10, () => ({}))).verdict).toBe('undecided');
    expect(judgeAgentWorkflow(steps(2, (i, step) => ({ intent: step % 2 ? GOAL[i] : ALT[i] }))).verdict).toBe(
      'undecided',
    );
  });

  it('calls a short wait-for cycle that persists a deadlock, and stalled holders when nothing says who waits', () => {
    const cycle = (n: number) =>
      judgeAgentWorkflow(
        steps(n, (i) => ({ holds: [`r${i}`], waitsFor: `r${(i + 1) % 3}`, action: 'wait' })),
      );
    expect(cycle(2).verdict).toBe('deadlock');
    expect(cycle(1).verdict).toBe('undecided');
    expect(judgeAgentWorkflow(steps(6, (i) => ({ holds: [`r${i}`], action: 'wait' }))).verdict).toBe(
      'deadlock',
    );
    expect(judgeAgentWorkflow(steps(4, (i) => ({ holds: [`r${i}`], action: 'wait' }))).verdict).toBe(
      'undecided',
    );
  });

  it('does not call a stall without a cycle a deadlock when the steps say who waits', () => {
    const sut = judgeAgentWorkflow(
      steps(8, (i) => ({ holds: i === 0 ? ['r0'] : [], waitsFor: i === 1 ? 'r9' : null, action: 'wait' })),
    );
    expect(sut.verdict).toBe('undecided');
  });
});

describe(pruningLambdaFor.name, () => {
  it('takes the least pruning of the spec table that relieves within the budget', () => {
    expect(pruningLambdaFor(1_000)).toMatchObject({ lambda: 0.01, prunedShare: 0.12 });
    expect(pruningLambdaFor(400)).toMatchObject({ lambda: 0.05, reliefMs: 320 });
    expect(pruningLambdaFor(50)).toMatchObject({ lambda: 0.1 });
  });
});

describe(observedStepOf.name, () => {
  it('keeps the well-typed fields of a step line and drops the rest', () => {
    expect(
      observedStepOf(
        {
          type: 'step',
          step: 3,
          agents: [
            {
              agent: 'a',
              intent: [0.6, 0.8],
              actionProbability: 0.5,
              action: 'wait',
              holds: ['r0', 7],
              waitsFor: 'r1',
              done: false,
            },
            { agent: 42 },
            { agent: 'b', intent: ['x'], waitsFor: null },
          ],
        },
        0,
      ),
    ).toEqual({
      step: 3,
      agents: [
        {
          agent: 'a',
          intent: [0.6, 0.8],
          actionProbability: 0.5,
          action: 'wait',
          holds: ['r0'],
          waitsFor: 'r1',
          done: false,
        },
        { agent: 'b', waitsFor: null },
      ],
    });
  });

  it('answers null for a line that names no agent', () => {
    expect(observedStepOf({ type: 'step', agents: 'many' }, 0)).toBeNull();
    expect(observedStepOf(null, 0)).toBeNull();
    expect(observedStepOf({ agents: [{ name: 'x' }] }, 0)).toBeNull();
  });
});
