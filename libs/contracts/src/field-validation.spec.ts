import { CampaignValidationError, parseCampaign } from './field-validation';

const valid = {
  name: 'chat smoke',
  target: { baseUrl: 'http://127.0.0.1:8000/v1' },
  scenario: { type: 'chat', prompts: ['hello'] },
  load: { concurrency: 4, durationMs: 1000 },
};

function issuesOf(input: unknown) {
  try {
    parseCampaign(input);
  } catch (error) {
    if (error instanceof CampaignValidationError) return error.issues;
    throw error;
  }
  throw new Error('expected a validation error');
}

describe(parseCampaign.name, () => {
  it('accepts a minimal chat campaign and fills defaults', () => {
    const sut = parseCampaign(valid);
    expect(sut.load.requestTimeoutMs).toBe(30000);
    expect(sut.scenario).toMatchObject({ type: 'chat', maxTokens: 64 });
  });

  it('names unknown fields', () => {
    expect(issuesOf({ ...valid, load: { ...valid.load, concurency: 3 } })).toEqual([
      { field: 'load.concurency', message: 'unknown field' },
    ]);
  });

  it('names a negative concurrency', () => {
    const issues = issuesOf({ ...valid, load: { ...valid.load, concurrency: -1 } });
    expect(issues.map((i) => i.field)).toEqual(['load.concurrency']);
  });

  it('names a malformed target URL', () => {
    expect(issuesOf({ ...valid, target: { baseUrl: 'not a url' } })[0].field).toBe('target.baseUrl');
  });
});
