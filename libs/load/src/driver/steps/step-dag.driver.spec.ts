import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CampaignSpecSchema } from '@fathom/contracts';
import { runShard } from '../../engine/run-shard';
import { jsonPathValue } from './step-assertion.evaluator';
import type { DriverOutcome } from '../request-outcome';

async function jsonServer() {
  const log: { path: string; at: number }[] = [];
  const server = createServer((req, res) => {
    log.push({ path: req.url ?? '', at: performance.now() });
    req.resume();
    req.on('end', () => {
      if (req.url === '/api/login')
        setTimeout(() => res.end(JSON.stringify({ token: 'abc', user: { roles: ['admin'] } })), 5);
      else if (req.url === '/api/report') res.end('{"status":"success","rows":3}');
      else if (req.url === '/api/busy') res.writeHead(429, { 'retry-after': '7' }).end('slow down');
      else if (req.url === '/api/embeddings')
        res.end('{"data":[{"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":2,"total_tokens":2}}');
      else res.writeHead(500).end('boom');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    log,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const specOf = (url: string, scenario: unknown, concurrency = 1) =>
  CampaignSpecSchema.parse({
    name: 'dag',
    target: { baseUrl: url },
    scenario,
    load: { concurrency, durationMs: 1000 },
  });

const runSpec = (spec: ReturnType<typeof specOf>) =>
  runShard({
    spec,
    shard: { index: 0, count: 1 },
    runId: 'r',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: () => undefined, window: () => undefined },
    signal: new AbortController().signal,
  });

const run = (url: string, scenario: unknown) => runSpec(specOf(url, scenario));

describe('HTTP steps with named semantic assertions', () => {
  it('reads JSONPath of the form $.a.b[0].c', () => {
    expect(jsonPathValue({ a: { b: [{ c: 4 }] } }, '$.a.b[0].c')).toBe(4);
    expect(jsonPathValue({ a: 1 }, '$.a.b')).toBeUndefined();
  });

  it('runs the DAG in dependency order, tallies each assertion and skips steps after a failure', async () => {
    const target = await jsonServer();
    try {
      const sut = await run(target.url, {
        type: 'http',
        steps: [
          {
            name: 'login',
            method: 'POST',
            path: '/api/login',
            body: { user: 'u' },
            assertions: [
              { kind: 'status', name: 'ok', equals: 200 },
              { kind: 'jsonpath', name: 'admin', path: '$.user.roles[0]', equals: 'admin' },
              { kind: 'latency', name: 'fast', belowMs: 1000 },
            ],
          },
          {
            name: 'report',
            path: '/api/report',
            dependsOn: ['login'],
            assertions: [
              { kind: 'body-contains', name: 'success', text: 'success' },
              { kind: 'regex', name: 'rows', pattern: '"rows":\\d+' },
            ],
          },
          { name: 'broken', path: '/api/broken', dependsOn: ['login'] },
          { name: 'after-broken', path: '/api/report', dependsOn: ['broken'] },
        ],
      });
      expect(sut.sent).toBeGreaterThan(1);
      expect(sut.errors).toBe(sut.sent); // the broken step fails every iteration with http-5xx
      expect(sut.assertions['login.ok']).toEqual({ passed: sut.sent, failed: 0 });
      expect(sut.assertions['report.rows']).toEqual({ passed: sut.sent, failed: 0 });
      const first = target.log.slice(0, 3).map((l) => l.path);
      expect(first[0]).toBe('/api/login');
      expect(target.log.filter((l) => l.path === '/api/report')).toHaveLength(sut.sent); // after-broken never ran
    } finally {
      await target.close();
    }
  });

  it('counts a failed assertion as an error naming it', async () => {
    const target = await jsonServer();
    try {
      const sut = await run(target.url, {
        type: 'http',
        steps: [
          {
            name: 'report',
            path: '/api/report',
            assertions: [{ kind: 'jsonpath', name: 'many-rows', path: '$.rows', equals: 10 }],
          },
        ],
      });
      expect(sut.errors).toBe(sut.sent);
      expect(sut.assertions['report.many-rows'].failed).toBe(sut.sent);
    } finally {
      await target.close();
    }
  });

  it("carries a refused step's Retry-After header to the record", async () => {
    const target = await jsonServer();
    const records: { errorClass: string | null; retryAfterS?: number }[] = [];
    try {
      await runShard({
        spec: CampaignSpecSchema.parse({
          name: 'dag',
          target: { baseUrl: target.url },
          scenario: { type: 'http', steps: [{ name: 'busy', path: '/api/busy' }] },
          load: { concurrency: 1, durationMs: 200, recordSampleRate: 1 },
        }),
        shard: { index: 0, count: 1 },
        runId: 'r',
        campaignId: 'c',
        generatorId: 'g',
        sink: { record: (r) => void records.push(r), window: () => undefined },
        signal: new AbortController().signal,
      });
      expect(records.length).toBeGreaterThan(0);
      expect(records.map((r) => [r.errorClass, r.retryAfterS])).toContainEqual(['http-4xx', 7]);
      expect(records.every((r) => r.retryAfterS === 7)).toBe(true);
    } finally {
      await target.close();
    }
  });

  it('refuses, before any request, a header whose secret resolved to a line break', async () => {
    // A request undici refuses stalls its pool: without this the run's requests hung and the
    // run never ended. The campaign schema refuses plain values; a secret is known only here.
    const target = await jsonServer();
    try {
      const spec = specOf(
        target.url,
        {
          type: 'http',
          steps: [
            { name: 'report', path: '/api/report', headers: { 'x-api-key': { env: 'FATHOM_SECRET_K' } } },
          ],
        },
        2,
      );
      const step = (spec.scenario as { steps: Array<{ headers: Record<string, unknown> }> }).steps[0];
      step.headers['x-api-key'] = 'abc\ndef'; // as the load-generator's resolver hands it over
      await expect(runSpec(spec)).rejects.toThrow(
        'step report: header x-api-key: the value holds a line break or NUL',
      );
      expect(target.log).toEqual([]);
    } finally {
      await target.close();
    }
  });

  it('refuses a cyclic DAG and unknown dependencies in the campaign', () => {
    const parse = (steps: unknown) =>
      CampaignSpecSchema.safeParse({
        name: 'x',
        target: { baseUrl: 'http://h' },
        scenario: { type: 'http', steps },
        load: { concurrency: 1, durationMs: 1 },
      });
    const cyclic = parse([
      { name: 'a', path: '/a', dependsOn: ['b'] },
      { name: 'b', path: '/b', dependsOn: ['a'] },
    ]);
    expect(cyclic.error?.issues[0].message).toBe('steps form a cycle');
    expect(parse([{ name: 'a', path: '/a', dependsOn: ['z'] }]).error?.issues[0].path).toEqual([
      'scenario',
      'steps',
      0,
      'dependsOn',
      0,
    ]);
  });

  it('drives an embeddings endpoint and checks one vector per input', async () => {
    const target = await jsonServer();
    try {
      const sut = await run(`${target.url}/api`, {
        type: 'embeddings',
        dataset: { type: 'inline', prompts: ['a', 'b'] },
      });
      expect(sut.sent).toBeGreaterThan(1);
      expect(sut.errors).toBe(0);
    } finally {
      await target.close();
    }
  });
  it('records the answers of steps with a tool contract as shapes, other steps not', async () => {
    const target = await jsonServer();
    try {
      const outcomes: DriverOutcome[] = [];
      await runShard({
        spec: CampaignSpecSchema.parse({
          name: 'dag',
          target: { baseUrl: target.url },
          scenario: {
            type: 'http',
            steps: [
              { name: 'login', method: 'POST', path: '/api/login', body: {} },
              {
                name: 'report',
                path: '/api/report',
                contract: { tool: 'reports', version: 'v1', responses: { '*': { type: 'object' } } },
              },
              { name: 'broken', path: '/api/broken', contract: { responses: { '*': { type: 'object' } } } },
            ],
          },
          load: { concurrency: 1, durationMs: 200 },
        }),
        shard: { index: 0, count: 1 },
        runId: 'r',
        campaignId: 'c',
        generatorId: 'g',
        sink: { record: () => undefined, window: () => undefined },
        signal: new AbortController().signal,
        tap: (_id, outcome) => outcomes.push(outcome),
      });
      expect(outcomes.length).toBeGreaterThan(0);
      const calls = outcomes[0].toolCalls!.sort((a, b) => a.tool.localeCompare(b.tool));
      expect(calls).toEqual([
        { tool: 'broken', version: 'unknown', status: 500, body: 'not-json' },
        {
          tool: 'reports',
          version: 'v1',
          status: 200,
          body: 'json',
          shape: {
            fields: { $: ['object'], '$.status': ['string'], '$.rows': ['integer'] },
            truncated: false,
          },
        },
      ]);
    } finally {
      await target.close();
    }
  });
});
