import { CampaignSpecSchema } from './campaign.schema';
import { HeadersSchema, RequestPathSchema, headerProblem } from './secret.schema';

const httpCampaign = (step: Record<string, unknown>) => ({
  name: 'h',
  target: { baseUrl: 'http://127.0.0.1:8000' },
  scenario: { type: 'http', steps: [{ name: 's', path: '/v1/x', ...step }] },
  load: { concurrency: 1, durationMs: 1000 },
});

describe('HTTP request fields a campaign gives', () => {
  // Each of these was accepted, failed its first requests, stalled undici's connection pool,
  // and the run never ended.
  it('refuses header names that are not tokens, connection headers and line breaks, naming each', () => {
    const result = HeadersSchema.safeParse({
      'bad name': 'x',
      Expect: '100-continue',
      'Transfer-Encoding': 'chunked',
      'x-note': 'a\r\nInjected: yes',
      'x-fine': 'ok',
    });
    expect(result.success).toBe(false);
    const issues = result.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    expect(issues).toEqual([
      expect.stringMatching(/^bad name: header name "bad name" is not an HTTP token/),
      expect.stringMatching(/^Expect: header Expect is the connection's/),
      expect.stringMatching(/^Transfer-Encoding: header Transfer-Encoding is the connection's/),
      'x-note: header x-note: the value holds a line break or NUL',
    ]);
  });

  it('takes ordinary headers, references to secrets included', () => {
    expect(
      HeadersSchema.parse({
        'content-type': 'application/json',
        'X-Request-Id': 'r-1',
        'x-api-key': { env: 'FATHOM_SECRET_KEY' },
      }),
    ).toEqual({ 'content-type': 'application/json', 'X-Request-Id': 'r-1', 'x-api-key': { env: 'FATHOM_SECRET_KEY' } });
    expect(headerProblem('x-api-key', 'abc\n')).toBe('header x-api-key: the value holds a line break or NUL');
    expect(headerProblem('x-api-key', 'abc')).toBeNull();
  });

  it('refuses paths with spaces or control characters, takes encoded ones', () => {
    expect(RequestPathSchema.safeParse('/v1/chat completions').success).toBe(false);
    expect(RequestPathSchema.safeParse('/v1/a\tb').success).toBe(false);
    expect(RequestPathSchema.parse('/v1/chat%20completions?q=1')).toBe('/v1/chat%20completions?q=1');
  });

  it('names the field in a whole campaign', () => {
    const result = CampaignSpecSchema.safeParse(
      httpCampaign({ headers: { Connection: 'upgrade' }, path: '/a b' }),
    );
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((i) => i.path.join('.')).sort()).toEqual([
      'scenario.steps.0.headers.Connection',
      'scenario.steps.0.path',
    ]);
  });
});
