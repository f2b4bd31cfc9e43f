import { CampaignSpecSchema, RunLifecycleSchema, type RunLifecycle } from '@fathom/contracts';
import { foldTokenStats } from './report-document.test-util';
import { buildRunSummary } from './run-summary.builder';
import { assertionCoverage, stepFigures } from './step-coverage';
import { assertionCoverageText } from './report-html.render';

const spec = CampaignSpecSchema.parse({
  name: 'steps',
  target: { baseUrl: 'http://127.0.0.1:1' },
  scenario: {
    type: 'http',
    assertions: [{ kind: 'body-contains', name: 'ok', text: 'success' }],
    steps: [
      { name: 'login', path: '/login', assertions: ['ok'], budgetMs: 50 },
      {
        kind: 'grpc',
        name: 'gen',
        dependsOn: ['login'],
        proto: { path: 'x.proto' },
        service: 'a.B',
        method: 'C',
        concurrency: 2,
        assertions: ['ok', { kind: 'status', name: 'code', equals: 0 }],
      },
      {
        kind: 'websocket',
        name: 'chat',
        dependsOn: ['gen'],
        url: '/ws',
        until: { frames: 1 },
        assertions: ['ok'],
      },
    ],
  },
  load: { concurrency: 1, durationMs: 1000 },
});

const tally = (runs: number, extra: Record<string, number> = {}) => ({
  runs,
  failed: 0,
  skipped: 0,
  slaMisses: 0,
  latencyMsSum: runs * 10,
  latencyMsMax: 20,
  firstMessages: runs,
  firstMessageMsSum: runs * 4,
  messages: runs,
  ...extra,
});

/** A shard-finished event as it arrives over the bus: parsed by the contract (what it strips is lost). */
function finished(index: number, assertions: object, steps: object): RunLifecycle {
  return RunLifecycleSchema.parse({
    schemaVersion: 1,
    id: `end-${index}`,
    campaignId: 'c',
    runId: 'r',
    emittedAt: 1000 + index,
    phase: 'shard-finished',
    shard: { index, count: 2 },
    generatorId: 'g',
    counts: {
      sent: 10,
      completed: 10,
      errors: 0,
      dropped: 0,
      recordsPublished: 0,
      windowsPublished: 0,
      late: 3,
      assertions,
      steps,
    },
  });
}

const lifecycle = [
  finished(
    0,
    {
      'login.ok': { passed: 6, failed: 0 },
      'gen.ok': { passed: 5, failed: 1 },
      'gen.code': { passed: 6, failed: 0 },
    },
    {
      login: tally(6, { slaMisses: 2 }),
      gen: tally(6, { failed: 1 }),
      chat: tally(0, { skipped: 6 }),
    },
  ),
  finished(
    1,
    {
      'login.ok': { passed: 4, failed: 0 },
      'gen.ok': { passed: 4, failed: 0 },
      'workflow.converged': { passed: 1, failed: 0 },
    },
    {
      login: tally(4, { latencyMsMax: 90, slaMisses: 1 }),
      gen: tally(4),
      chat: tally(0, { skipped: 4 }),
    },
  ),
];

describe('assertion coverage and step figures', () => {
  it('keeps per-assertion and per-step counts on the shard-end event', () => {
    expect(lifecycle[0].counts.assertions?.['gen.ok']).toEqual({ passed: 5, failed: 1 });
    expect(lifecycle[0].counts.steps?.login.slaMisses).toBe(2);
  });

  it('says which declared assertions ran, passed, failed and never ran, summed over shards', () => {
    const sut = assertionCoverage(spec, lifecycle)!;
    expect(sut).toMatchObject({ declared: 4, ran: 4, passed: 3, failed: 1, neverRan: 1 });
    expect(sut.byName).toEqual([
      { name: 'login.ok', declared: true, state: 'passed', passes: 10, failures: 0 },
      { name: 'gen.ok', declared: true, state: 'failed', passes: 9, failures: 1 },
      { name: 'gen.code', declared: true, state: 'passed', passes: 6, failures: 0 },
      { name: 'chat.ok', declared: true, state: 'never-ran', passes: 0, failures: 0 },
      { name: 'workflow.converged', declared: false, state: 'passed', passes: 1, failures: 0 },
    ]);
    expect(assertionCoverageText(sut)).toBe(
      "3/4 declared assertions ran (75 %): 3 passed, 1 failed, 1 never ran (1 of the driver's own included)",
    );
  });

  it('gives each step its runs, skips, SLA misses against its budget and latency', () => {
    expect(stepFigures(spec, lifecycle)).toEqual([
      {
        name: 'login',
        kind: 'http',
        budgetMs: 50,
        concurrency: null,
        runs: 10,
        failed: 0,
        skipped: 0,
        slaMisses: 3,
        latencyMeanMs: 10,
        latencyMaxMs: 90,
        firstMessageMeanMs: 4,
        messages: 10,
      },
      expect.objectContaining({ name: 'gen', kind: 'grpc', concurrency: 2, runs: 10, failed: 1 }),
      expect.objectContaining({ name: 'chat', kind: 'websocket', runs: 0, skipped: 10, latencyMeanMs: null }),
    ]);
  });

  it('puts both in the run summary; a run without assertions or steps has neither', () => {
    const evidence = {
      spec,
      lifecycle,
      windows: [],
      tokenStats: foldTokenStats([]),
      detectorSignals: 0,
      gpu: [],
      tierChanges: [],
      aborted: false,
    };
    const summary = buildRunSummary(evidence);
    expect(summary.assertions?.neverRan).toBe(1);
    expect(summary.steps).toHaveLength(3);
    const chat = CampaignSpecSchema.parse({
      name: 'chat',
      target: { baseUrl: 'http://127.0.0.1:1/v1' },
      scenario: { type: 'chat', prompts: ['hi'] },
      load: { concurrency: 1, durationMs: 1000 },
    });
    const plain = buildRunSummary({ ...evidence, spec: chat, lifecycle: [] });
    expect(plain.assertions).toBeUndefined();
    expect(plain.steps).toBeUndefined();
  });
});
