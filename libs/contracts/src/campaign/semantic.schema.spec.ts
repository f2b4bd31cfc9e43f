import { CampaignSpecSchema } from './campaign.schema';
import { SemanticBaselineSpecSchema } from './semantic.schema';

const campaign = (semantic: unknown) => ({
  name: 'drift',
  target: { baseUrl: 'http://127.0.0.1:8000/v1' },
  scenario: { type: 'chat', prompts: ['hi'] },
  load: { concurrency: 1, durationMs: 1000 },
  semantic,
});

const issues = (input: unknown) => {
  const r = SemanticBaselineSpecSchema.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('semantic.baseline in the campaign spec', () => {
  it('defaults to comparing with the latest baseline of the campaign and recording the run', () => {
    expect(CampaignSpecSchema.parse(campaign({ baseline: {} })).semantic?.baseline).toEqual({
      compareWith: 'latest',
      record: true,
      maxItems: 256,
      minCosine: 0.42,
      maxDriftedShare: 0.05,
      minPairs: 5,
    });
    expect(CampaignSpecSchema.parse(campaign(undefined)).semantic).toBeUndefined();
  });

  it('pins a run by id, and refuses unknown fields and other shapes of compareWith', () => {
    expect(SemanticBaselineSpecSchema.parse({ compareWith: { runId: 'r1' } }).compareWith).toEqual({
      runId: 'r1',
    });
    expect(issues({ compareWith: 'previous' })).toHaveLength(1);
    expect(issues({ compareWith: { run: 'r1' } }).length).toBeGreaterThan(0);
    expect(CampaignSpecSchema.safeParse(campaign({ baseline: {}, drift: true })).success).toBe(false);
    expect(issues({ maxItems: 100000 })).toEqual([expect.stringMatching(/^maxItems:/)]);
  });

  it('refuses an intent rule whose pattern is not a regular expression, naming it', () => {
    expect(issues({ intents: [{ label: 'refund', pattern: '(refund' }] })).toEqual([
      expect.stringMatching(/^intents\.0\.pattern: not a valid regular expression/),
    ]);
    expect(issues({ intents: [{ label: 'refund', pattern: 'refund', flags: 'g' }] })).toEqual([
      'intents.0.flags: flags may only be i, m, s, u',
    ]);
  });

  it('needs intents with a classifier, and every intent among its labels', () => {
    const classifier = { path: '/models/intents.onnx', labels: ['billing', 'refund'] };
    expect(issues({ classifier })).toEqual([
      'intents: a classifier needs intents: rules that give each prompt its true label',
    ]);
    expect(issues({ classifier, intents: [{ label: 'support', pattern: 'help' }] })).toEqual([
      "intents.0.label: intent support is not among the classifier's labels",
    ]);
    expect(issues({ classifier, intents: [{ label: 'refund', pattern: 'refund' }] })).toEqual([]);
  });
});
