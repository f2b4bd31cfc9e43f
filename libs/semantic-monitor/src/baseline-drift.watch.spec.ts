/**
 * @jest-environment ./libs/semantic/src/testing/ort.jest-environment.js
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunTimeline, evaluateObjective } from '@fathom/analysis';
import {
  SemanticBaselineSpecSchema,
  type DetectorSignal,
  type RequestRecord,
  type SemanticBaselineSpec,
} from '@fathom/contracts';
import { RESPONSE_BASELINE_NAME, intentHeadToOnnx, trainNearestCentroidHead } from '@fathom/semantic';
import { BaselineRepository, CampaignRepository, openDatabase, type Database } from '@fathom/storage';
import { BaselineDriftWatch } from './baseline-drift.watch';

const D = 8;
const EMBEDDER = { name: 'test-embedder', dimensions: D };

/** A response near axis `axis` of an 8-dimensional space, with a little deterministic noise. */
function near(axis: number, salt: number): Float32Array {
  return Float32Array.from({ length: D }, (_, d) => (d === axis ? 1 : 0) + 0.05 * Math.sin(7 * salt + 3 * d));
}

function record(prompt: string, i: number): RequestRecord {
  return {
    requestId: `r${i}`,
    shard: 0,
    scheduledAt: 0,
    startedAt: 0,
    ttftMs: 1,
    e2eMs: 2,
    correctedE2eMs: 2,
    chunkOffsetsMs: [],
    status: 200,
    errorClass: null,
    inputTokensClient: 1,
    outputTokensClient: 1,
    usage: null,
    content: `answer to ${prompt}`,
    finishReason: 'stop',
    prompt,
  };
}

const PROMPTS = ['reset my password', 'refund my order', 'where is my invoice', 'cancel my plan'];

describe(BaselineDriftWatch.name, () => {
  let db: Database;
  let repository: BaselineRepository;
  let campaignId: string;
  let dir: string;
  const signals: DetectorSignal[] = [];

  beforeAll(async () => {
    db = await openDatabase({ kind: 'pglite', dataDir: null });
    repository = new BaselineRepository(db);
    const campaign = await new CampaignRepository(db).create({
      spec: {
        name: 'watch',
        target: { baseUrl: 'http://127.0.0.1:1/v1' },
        scenario: { type: 'chat', prompts: ['x'] },
        load: { concurrency: 1, durationMs: 1000 },
      } as never,
    });
    campaignId = campaign.id;
    dir = mkdtempSync(join(tmpdir(), 'fathom-intents-'));
  });
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const spec = (input: Record<string, unknown>): SemanticBaselineSpec =>
    SemanticBaselineSpecSchema.parse(input);
  const watch = (runId: string, input: Record<string, unknown>, campaign = campaignId) =>
    new BaselineDriftWatch(campaign, runId, spec(input), {
      repository,
      publish: async (s) => void signals.push(s),
      logger: { warn: () => undefined },
    });
  const byId = (id: string) => signals.find((s) => s.id === id);

  /** Every prompt answered `times` times; `axisOf(prompt index)` places each answer. */
  async function runThrough(
    sut: BaselineDriftWatch,
    axisOf: (p: number) => number,
    times = 3,
    embedder = EMBEDDER,
  ): Promise<void> {
    const records = PROMPTS.flatMap((p, k) => Array.from({ length: times }, (_, t) => record(p, k * 10 + t)));
    const vectors = records.map((r, i) => near(axisOf(PROMPTS.indexOf(r.prompt as string)), i));
    await sut.observe(records, vectors, embedder);
    await sut.finish(true, Promise.resolve());
  }

  it('records a first run, finds the same answers undrifted, and flags answers that moved to other intents', async () => {
    await runThrough(watch('run-a', {}), (p) => p);
    expect(byId('run-a/baseline-drift/load')?.message).toMatch(/no baseline yet/);
    expect(byId('run-a/baseline-drift/record')?.figures).toEqual({ responses: 12 });
    expect((await repository.forRun('run-a', RESPONSE_BASELINE_NAME))?.campaignId).toBe(campaignId);

    await runThrough(watch('run-b', {}), (p) => p);
    expect(byId('run-b/baseline-drift/final')).toMatchObject({
      severity: 'info',
      figures: { pairs: 12, drifted: 0, driftedShare: 0, baselinePrompts: 4 },
    });
    expect(byId('run-b/intent-accuracy/final')).toMatchObject({
      severity: 'info',
      figures: { classified: 12, baselineAccuracy: 1, accuracy: 1, intentAccuracyDrop: 0, intents: 4 },
    });

    // Run C against run A (pinned): the answers to prompts 0 and 1 are swapped.
    await runThrough(watch('run-c', { compareWith: { runId: 'run-a' } }), (p) => [1, 0, 2, 3][p]);
    const drift = byId('run-c/baseline-drift/final');
    expect(drift?.severity).toBe('warning');
    expect(drift?.figures).toMatchObject({ pairs: 12, drifted: 6, driftedShare: 0.5 });
    const intent = byId('run-c/intent-accuracy/final') as DetectorSignal;
    expect(intent.severity).toBe('critical');
    expect(intent.figures).toMatchObject({ accuracy: 0.5, intentAccuracyDrop: 0.5 });
    expect(byId('run-c/baseline-drift/record')?.message).toMatch(/not recorded.*drifted/);
    expect(await repository.forRun('run-c', RESPONSE_BASELINE_NAME)).toBeNull();

    // The analyzer's intent-accuracy-drop objective reads exactly this figure.
    const timeline = new RunTimeline();
    timeline.addDetector(intent);
    const span = timeline.span(intent.emittedAt - 1, intent.emittedAt);
    const judged = evaluateObjective({ kind: 'intent-accuracy-drop', max: 0.05 }, span, {
      breakerTripsPerMinute: 0,
    });
    expect(judged).toMatchObject({ ok: false, value: 0.5 });
  });

  it('runs a user ONNX classifier with intent rules in place of the trained head', async () => {
    // The user's classifier knows two intents: account (axes 0, 3) and money (axes 1, 2).
    const prototypes = [0, 3, 1, 2].map((axis) => near(axis, 0));
    const head = trainNearestCentroidHead(prototypes, ['account', 'account', 'money', 'money']);
    const path = join(dir, 'intents.onnx');
    writeFileSync(path, intentHeadToOnnx(head));
    const intents = [
      { label: 'account', pattern: 'password|cancel' },
      { label: 'money', pattern: 'refund|invoice' },
    ];
    const classifier = { path, labels: head.labels };
    await runThrough(watch('run-u1', { intents, classifier }), (p) => p);
    expect(byId('run-u1/baseline-drift/record')?.message).toMatch(/recorded as a baseline/);

    // Answers to "refund my order" now look like account answers: a quarter of the responses misread.
    await runThrough(
      watch('run-u2', { intents, classifier, compareWith: { runId: 'run-u1' } }),
      (p) => [0, 3, 2, 3][p],
    );
    expect(byId('run-u2/intent-accuracy/final')?.figures).toMatchObject({
      baselineAccuracy: 1,
      accuracy: 0.75,
      intentAccuracyDrop: 0.25,
      intents: 2,
    });
  });

  it('says why it cannot compare: no baseline for the pinned run, another embedder, too few pairs', async () => {
    await runThrough(watch('run-x', { compareWith: { runId: 'never-recorded' }, record: false }), (p) => p);
    expect(byId('run-x/baseline-drift/load')).toMatchObject({
      severity: 'warning',
      message: expect.stringMatching(/no baseline for run never-recorded/),
    });
    expect(byId('run-x/baseline-drift/final')).toBeUndefined();

    await runThrough(watch('run-y', { compareWith: { runId: 'run-a' }, record: false }), (p) => p, 3, {
      name: 'another-embedder',
      dimensions: D,
    });
    expect(byId('run-y/baseline-drift/embedder')?.message).toMatch(
      /embedded by test-embedder .* not comparable/,
    );
    expect(byId('run-y/baseline-drift/final')).toBeUndefined();

    await runThrough(
      watch('run-z', { compareWith: { runId: 'run-a' }, record: false, minPairs: 50 }),
      (p) => p,
    );
    expect(byId('run-z/baseline-drift/final')?.message).toMatch(
      /12 responses compared .* fewer than 50: no verdict/,
    );
    expect(byId('run-z/intent-accuracy/final')?.figures.intentAccuracyDrop).toBeUndefined();
  });
});
