import { REDACTED, redactSpec } from './spec-redaction.util';

describe(redactSpec.name, () => {
  it('hides credentials, header values and URL user info and keeps the rest', () => {
    const sut = redactSpec({
      name: 'c',
      target: { baseUrl: 'http://user:pw@127.0.0.1:8000/v1', apiKey: 'sk-123', metricsUrls: [] },
      scenario: {
        type: 'http',
        steps: [{ name: 's', headers: { 'X-Api': 'abc', Accept: 'json' }, path: '/a' }],
        qdrant: { apiKey: 'q', url: 'http://127.0.0.1:6333' },
      },
      load: { concurrency: 2, durationMs: 1000 },
    });
    const text = JSON.stringify(sut);
    expect(text).not.toMatch(/sk-123|abc|"q"|user|pw@/);
    expect(sut).toMatchObject({
      target: { baseUrl: 'http://127.0.0.1:8000/v1', apiKey: REDACTED },
      scenario: { steps: [{ headers: { 'X-Api': REDACTED, Accept: REDACTED }, path: '/a' }] },
      load: { concurrency: 2, durationMs: 1000 },
    });
  });
});
