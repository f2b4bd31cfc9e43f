import { CampaignSpecSchema, type RequestRecord } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { runShard, type ShardResult } from '../engine/run-shard';
import { mergeWindows, type WindowSnapshot } from '../measure/window.snapshot';

interface Run {
  result: ShardResult;
  records: RequestRecord[];
  windows: WindowSnapshot[];
}

async function run(sim: SimTarget, scenario: Record<string, unknown> = {}, durationMs = 400): Promise<Run> {
  const records: RequestRecord[] = [];
  const windows: WindowSnapshot[] = [];
  const result = await runShard({
    spec: CampaignSpecSchema.parse({
      name: 'agents',
      target: { baseUrl: `${sim.url}/v1` },
      scenario: { type: 'agents', ...scenario },
      load: { concurrency: 2, durationMs },
    }),
    shard: { index: 0, count: 1 },
    runId: 'r',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: (r) => void records.push(r), window: (w) => void windows.push(w) },
    signal: new AbortController().signal,
  });
  return { result, records, windows };
}

describe('multi-agent workflows against the simulated target', () => {
  let sim: SimTarget;
  // stepMs 20 (model) x timeScale 0.5: a step every 10 ms of wall time.
  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.5 } });
  });
  afterAll(() => sim.close());
  afterEach(() => sim.faults.clearAll());

  it('records each step as it arrives and passes a converging run', async () => {
    const sut = await run(sim, { agents: 3, steps: 12 }, 800);
    expect(sut.result.sent).toBeGreaterThan(2);
    expect(sut.result.errors).toBe(0);
    expect(sut.result.assertions['workflow.converged']).toEqual({ passed: sut.result.sent, failed: 0 });
    const record = sut.records[0];
    expect(record.finishReason).toBe('completed');
    expect(JSON.parse(record.content).observed).toMatchObject({ verdict: 'converged', recurrence: 0 });
    // converge: agent i executes at step i, so 3 agents finish after 3 steps.
    expect(record.chunkOffsetsMs).toHaveLength(3);
    expect(record.ttftMs).toBe(record.chunkOffsetsMs[0]);
    // Gaps between steps over all records: the median is the sim's 10 ms step (warm-up outliers aside).
    const gaps = sut.records
      .flatMap((r) => r.chunkOffsetsMs.slice(1).map((at, i) => at - r.chunkOffsetsMs[i]))
      .sort((x, y) => x - y);
    const median = gaps[Math.floor(gaps.length / 2)];
    expect(median).toBeGreaterThan(8);
    expect(median).toBeLessThan(30);
  });

  it('shows oscillation as a failed workflow.no-oscillation and an error in the run', async () => {
    sim.faults.set({ kind: 'agent_oscillation', durationMs: 60000 });
    const sut = await run(sim, { agents: 3, steps: 6 });
    expect(sut.result.sent).toBeGreaterThan(0);
    expect(sut.result.assertions['workflow.no-oscillation']).toEqual({ passed: 0, failed: sut.result.sent });
    expect(sut.result.assertions['workflow.no-deadlock'].failed).toBe(0);
    expect(mergeWindows(sut.windows).errorClasses).toEqual({ other: sut.result.sent });
    expect(sut.records[0]).toMatchObject({ finishReason: 'oscillating', errorClass: 'other' });
    expect(sut.records[0].errorMessage).toMatch(
      /^workflow oscillating \(observed\): 100 % of 12 agent moves return to the intent of two steps before, score \d\.\d{3} after 6 steps$/,
    );
    expect(JSON.parse(sut.records[0].content).observed).toMatchObject({
      verdict: 'oscillating',
      recurrence: 1,
    });
    expect(sut.records[0].chunkOffsetsMs).toHaveLength(6);
  });

  it('shows deadlock with the wait-for cycle', async () => {
    sim.faults.set({ kind: 'agent_deadlock', durationMs: 60000 });
    const sut = await run(sim, { agents: 3, steps: 4 });
    expect(sut.result.assertions['workflow.no-deadlock']).toEqual({ passed: 0, failed: sut.result.sent });
    expect(sut.records[0].finishReason).toBe('deadlock');
    // Judged from the steps seen: who held what and waited for whom.
    expect(sut.records[0].errorMessage).toBe(
      'workflow deadlock (observed): wait-for cycle agent-0 -> agent-1 -> agent-2 for 4 steps after 4 steps',
    );
    expect(JSON.parse(sut.records[0].content).observed).toMatchObject({
      verdict: 'deadlock',
      waitForCycle: ['agent-0', 'agent-1', 'agent-2'],
    });
  });

  it('checks every step against stepBudgetMs', async () => {
    const tight = await run(sim, { agents: 3, stepBudgetMs: 2 });
    expect(tight.result.assertions['workflow.step-latency']).toEqual({
      passed: 0,
      failed: tight.result.sent,
    });
    const loose = await run(sim, { agents: 3, stepBudgetMs: 5000 });
    expect(loose.result.assertions['workflow.step-latency']).toEqual({
      passed: loose.result.sent,
      failed: 0,
    });
  });
});
