import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Topics } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { startEmbedded, waitForRun, type EmbeddedFathom } from '@fathom/runtime';
import { createRepositories } from '@fathom/storage';

const TOKEN = 'api-hardening-token-for-tests';
/** Planted where a campaign references it; must show up only in what the target received. */
const PLANTED = `sk-planted-${Math.random().toString(36).slice(2)}-secret`;

/** A loopback server that records what arrives and forwards it to `upstream` (or answers 200). */
async function recorder(host: string, upstream?: string) {
  const seen: IncomingHttpHeaders[] = [];
  const target = upstream ? new URL(upstream) : null;
  const server: Server = createServer((req, res) => {
    seen.push(req.headers);
    if (!target) {
      res.end('ok');
      return;
    }
    const forward = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('the API against an attacker (issue 14: input, files, secrets, reach)', () => {
  jest.setTimeout(90_000);
  let sim: SimTarget;
  let proxy: Awaited<ReturnType<typeof recorder>>;
  let outside: Awaited<ReturnType<typeof recorder>>;
  let sut: EmbeddedFathom;
  let dataDir: string;
  let elsewhere: string;
  const logged: string[] = [];
  const saved = { ...process.env };
  const writes = {
    out: process.stdout.write.bind(process.stdout),
    err: process.stderr.write.bind(process.stderr),
  };

  const api = (path: string, init: { method?: string; body?: unknown; token?: string | null } = {}) =>
    fetch(`${sut.url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: {
        'content-type': 'application/json',
        ...(init.token === null ? {} : { authorization: `Bearer ${init.token ?? TOKEN}` }),
      },
      body:
        init.body === undefined
          ? undefined
          : typeof init.body === 'string'
            ? init.body
            : JSON.stringify(init.body),
    });

  const campaign = (overrides: Record<string, unknown> = {}, scenario: Record<string, unknown> = {}) => ({
    name: 'hardening',
    target: { baseUrl: `${proxy.url}/v1` },
    scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['hello'], maxTokens: 4, ...scenario },
    load: { concurrency: 1, durationMs: 600 },
    reruns: { maxReruns: 0, cooldownMs: 0 },
    ...overrides,
  });

  const issuesOf = async (response: Response) => {
    expect(response.status).toBe(400);
    return JSON.stringify(await response.json());
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'fathom-data-files-'));
    elsewhere = await mkdtemp(join(tmpdir(), 'fathom-elsewhere-'));
    await writeFile(join(dataDir, 'prompts.jsonl'), '{"prompt":"hello from the data directory"}\n');
    await writeFile(join(elsewhere, 'shadow'), 'root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\n');
    await symlink(join(elsewhere, 'shadow'), join(dataDir, 'link-out.jsonl'));
    Object.assign(process.env, {
      FATHOM_API_TOKEN: TOKEN,
      FATHOM_DATA_FILES_DIR: dataDir,
      FATHOM_ALLOWED_TARGETS: '127.0.0.2',
      FATHOM_SECRET_PLANTED: PLANTED,
      FATHOM_ANALYZER_SETTLE_MS: '500',
    });
    sim = await startSimTarget({ port: 0, host: '127.0.0.2', config: { timeScale: 0.05 } });
    proxy = await recorder('127.0.0.2', sim.url);
    outside = await recorder('127.0.0.1');
    // Every log line of the five services while the test runs.
    const capture =
      (write: typeof writes.out) =>
      (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
        logged.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
        return (write as (c: string | Uint8Array, ...r: unknown[]) => boolean)(chunk, ...rest);
      };
    process.stdout.write = capture(writes.out) as typeof process.stdout.write;
    process.stderr.write = capture(writes.err) as typeof process.stderr.write;
    sut = await startEmbedded({ dataDir: null, logLevels: ['error', 'warn', 'log', 'debug', 'verbose'] });
  });

  afterAll(async () => {
    await sut?.close();
    process.stdout.write = writes.out;
    process.stderr.write = writes.err;
    await proxy?.close();
    await outside?.close();
    await sim?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(elsewhere, { recursive: true, force: true });
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  });

  it('answers 400, not 500, to a step body nested 5,000 deep, and to any body nested too deep', async () => {
    // Written as text: JSON.stringify itself overflows on it here.
    const body = `${'{"b":'.repeat(5000)}"leaf"${'}'.repeat(5000)}`;
    const deep = campaign({}, { type: 'http', steps: [{ name: 's', path: '/models', body: 'BODY' }] });
    for (const key of ['model', 'prompts', 'maxTokens'])
      delete (deep.scenario as Record<string, unknown>)[key];
    const text = JSON.stringify(deep).replace('"BODY"', body);
    expect(await issuesOf(await api('/v1/campaigns', { body: text }))).toContain(
      'nested deeper than 64 levels',
    );
    expect(
      await issuesOf(await api('/v1/alert-rules', { body: `${'['.repeat(20_000)}${']'.repeat(20_000)}` })),
    ).toContain('nested deeper');
  });

  it('needs the token for reads too, but not for /health, /metrics or the OpenAPI document', async () => {
    for (const path of [
      '/v1/runs',
      '/v1/campaigns/x',
      '/v1/runs/x',
      '/v1/schedules',
      '/v1/alert-rules',
      '/v1/shadow-campaigns/x',
    ])
      expect([path, (await api(path, { token: null })).status]).toEqual([path, 401]);
    expect((await api('/v1/runs')).status).toBe(200);
    for (const path of ['/health', '/metrics', '/docs/openapi.json'])
      expect([path, (await api(path, { token: null })).status]).toEqual([path, 200]);
  });

  it('reads dataset, replay and shadow files only from FATHOM_DATA_FILES_DIR, and never through .. or a link', async () => {
    const jsonl = (path: string) => campaign({}, { prompts: undefined, dataset: { type: 'jsonl', path } });
    for (const path of [
      '/etc/passwd',
      '/proc/self/environ',
      '../x.jsonl',
      'link-out.jsonl',
      join(elsewhere, 'shadow'),
    ]) {
      const answer = await issuesOf(await api('/v1/campaigns', { body: jsonl(path) }));
      expect(answer).toContain('scenario.dataset.path');
      expect(answer).not.toContain('root:');
    }
    for (const dataset of [
      { type: 'sharegpt', path: '/etc/passwd' },
      { type: 'csv', path: '/etc/passwd' },
    ]) {
      const body = campaign({}, { prompts: undefined, dataset });
      expect(await issuesOf(await api('/v1/campaigns', { body }))).toContain('scenario.dataset.path');
    }
    const tokenizer = campaign({}, { tokenizer: { path: '/etc/passwd' } });
    expect(await issuesOf(await api('/v1/campaigns', { body: tokenizer }))).toContain(
      'scenario.tokenizer.path',
    );
    const replay = campaign({
      load: { concurrency: 1, durationMs: 600, profile: { type: 'replay', path: '/etc/hostname' } },
    });
    expect(await issuesOf(await api('/v1/campaigns', { body: replay }))).toContain('load.profile.path');
    const proto = campaign({
      scenario: {
        type: 'http',
        steps: [{ kind: 'grpc', name: 'g', proto: { path: '/etc/passwd' }, service: 'a.B', method: 'C' }],
      },
    });
    expect(await issuesOf(await api('/v1/campaigns', { body: proto }))).toContain(
      'scenario.steps.0.proto.path',
    );
    const shadow = {
      name: 's',
      primary: { baseUrl: `${proxy.url}/v1` },
      secondary: { baseUrl: `${proxy.url}/v1` },
      candidate: { baseUrl: `${proxy.url}/v1` },
      model: 'fathom-sim-8b',
      source: { type: 'jsonl', path: '/etc/passwd' },
    };
    expect(await issuesOf(await api('/v1/shadow-campaigns', { body: shadow }))).toContain('source.path');
    // Inside the directory: accepted, and run from it.
    const accepted = await api('/v1/campaigns', { body: jsonl('prompts.jsonl') });
    expect(accepted.status).toBe(201);
    const { runId } = (await accepted.json()) as { runId: string };
    expect((await waitForRun(sut.runs, runId, { timeoutMs: 30_000 })).status).toBe('completed');
  });

  it('refuses every URL outside FATHOM_ALLOWED_TARGETS with 400 before sending anything', async () => {
    const aimed = `${outside.url}/v1`;
    const cases: Array<[string, unknown, string]> = [
      ['/v1/campaigns', campaign({ target: { baseUrl: aimed } }), 'target.baseUrl'],
      [
        '/v1/campaigns',
        campaign({ target: { baseUrl: `${proxy.url}/v1`, metricsUrls: [`${outside.url}/metrics`] } }),
        'target.metricsUrls.0',
      ],
      [
        '/v1/shadow-campaigns',
        {
          name: 's',
          primary: { baseUrl: `${proxy.url}/v1` },
          secondary: { baseUrl: `${proxy.url}/v1` },
          candidate: { baseUrl: aimed },
          model: 'fathom-sim-8b',
          source: { type: 'inline', requests: [{ body: { messages: [{ role: 'user', content: 'hi' }] } }] },
        },
        'candidate.baseUrl',
      ],
    ];
    const step = (extra: Record<string, unknown>) =>
      campaign({ scenario: { type: 'http', steps: [{ path: '/v1/models', name: 'ok' }, extra] } });
    cases.push(
      [
        '/v1/campaigns',
        step({
          kind: 'grpc',
          name: 'g',
          address: outside.url.replace('http://', ''),
          proto: { text: 'syntax = "proto3";' },
          service: 'a.B',
          method: 'C',
        }),
        'scenario.steps.1.address',
      ],
      [
        '/v1/campaigns',
        step({
          kind: 'websocket',
          name: 'w',
          url: `${outside.url.replace('http', 'ws')}/ws`,
          until: { frames: 1 },
        }),
        'scenario.steps.1.url',
      ],
    );
    for (const [path, body, field] of cases) {
      const answer = await issuesOf(await api(path, { body }));
      expect(answer).toContain(field);
      expect(answer).toContain('not in FATHOM_ALLOWED_TARGETS');
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(outside.seen).toHaveLength(0);
  });

  it('refuses credentials given by value or inside a URL', async () => {
    const plainKey = campaign({ target: { baseUrl: `${proxy.url}/v1`, apiKey: PLANTED } });
    expect(await issuesOf(await api('/v1/campaigns', { body: plainKey }))).toContain('target.apiKey');
    const header = campaign(
      {},
      {
        type: 'http',
        steps: [{ name: 's', path: '/models', headers: { Authorization: `Bearer ${PLANTED}` } }],
      },
    );
    for (const key of ['model', 'prompts', 'maxTokens'])
      delete (header.scenario as Record<string, unknown>)[key];
    expect(await issuesOf(await api('/v1/campaigns', { body: header }))).toContain(
      'scenario.steps.0.headers.Authorization',
    );
    const inUrl = campaign({ target: { baseUrl: `http://user:${PLANTED}@127.0.0.2:1/v1` } });
    const answer = await issuesOf(await api('/v1/campaigns', { body: inUrl }));
    expect(answer).toContain('credentials inside a URL');
    expect(answer).not.toContain(PLANTED);
    const envOutside = campaign({ target: { baseUrl: `${proxy.url}/v1`, apiKey: { env: 'DATABASE_URL' } } });
    expect(await issuesOf(await api('/v1/campaigns', { body: envOutside }))).toContain('FATHOM_SECRET_');
  });

  it('sends a referenced secret to the target and nowhere else: no table, bus message, log line or answer holds it', async () => {
    const ref = { env: 'FATHOM_SECRET_PLANTED' };
    const chat = await api('/v1/campaigns', {
      body: campaign({
        target: { baseUrl: `${proxy.url}/v1`, apiKey: ref, metricsUrls: [`${sim.url}/metrics`] },
      }),
    });
    expect(chat.status).toBe(201);
    const http = campaign(
      {},
      {
        type: 'http',
        steps: [{ name: 'models', path: '/models', headers: { Authorization: ref, 'x-plain': 'visible' } }],
      },
    );
    for (const key of ['model', 'prompts', 'maxTokens'])
      delete (http.scenario as Record<string, unknown>)[key];
    const step = await api('/v1/campaigns', { body: http });
    expect(step.status).toBe(201);
    const shadow = await api('/v1/shadow-campaigns', {
      body: {
        name: 'shadow with keys',
        primary: { baseUrl: `${proxy.url}/v1`, apiKey: ref },
        secondary: { baseUrl: `${proxy.url}/v1`, apiKey: ref },
        candidate: { baseUrl: `${proxy.url}/v1`, apiKey: ref },
        model: 'fathom-sim-8b',
        source: { type: 'inline', requests: [{ body: { messages: [{ role: 'user', content: 'hi' }] } }] },
      },
    });
    expect(shadow.status).toBe(201);
    const started = [
      (await chat.json()) as { campaignId: string; runId: string },
      (await step.json()) as { campaignId: string; runId: string },
    ];
    const shadowId = ((await shadow.json()) as { id: string }).id;
    for (const { runId } of started)
      expect((await waitForRun(sut.runs, runId, { timeoutMs: 45_000 })).status).toBe('completed');
    for (let i = 0; i < 100; i++) {
      const body = (await (await api(`/v1/shadow-campaigns/${shadowId}`)).json()) as { status: string };
      if (body.status !== 'running') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    // The secret did go where it belongs: the test can see a leak-free run that still works.
    expect(proxy.seen.filter((h) => h.authorization === `Bearer ${PLANTED}`).length).toBeGreaterThan(3);

    const found: string[] = [];
    // Every table.
    const tables = await sut.database.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
    );
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining(['campaigns', 'runs', 'run_events']),
    );
    for (const { table_name } of tables) {
      const rows = await sut.database.query<{ row: string }>(`SELECT t::text AS row FROM "${table_name}" t`);
      if (rows.some((r) => r.row.includes(PLANTED))) found.push(`table ${table_name}`);
    }
    // Every message on every topic.
    for (const topic of Object.values(Topics) as Array<(typeof Topics)['runShard']>) {
      const messages: string[] = [];
      const subscription = await sut.bus.subscribe(
        topic,
        { group: `leak-check-${topic.name}`, fromBeginning: true },
        async (event) => {
          messages.push(JSON.stringify(event));
        },
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      await subscription.close();
      if (messages.some((m) => m.includes(PLANTED))) found.push(`topic ${topic.name}`);
    }
    // Every API answer about them.
    const answers = [
      '/v1/runs',
      ...started.flatMap(({ campaignId, runId }) => [
        `/v1/campaigns/${campaignId}`,
        `/v1/runs/${runId}`,
        `/v1/runs/${runId}/report`,
      ]),
      `/v1/shadow-campaigns/${shadowId}`,
      `/v1/shadow-campaigns/${shadowId}/samples`,
    ];
    for (const path of answers)
      if ((await (await api(path)).text()).includes(PLANTED)) found.push(`GET ${path}`);
    // Every log line.
    if (logged.some((line) => line.includes(PLANTED))) found.push('logs');
    expect(found).toEqual([]);
    // What is returned is the reference.
    const stored = (await (await api(`/v1/campaigns/${started[0].campaignId}`)).json()) as {
      spec: { target: { apiKey: unknown } };
    };
    expect(stored.spec.target.apiKey).toEqual(ref);
    expect(logged.length).toBeGreaterThan(10);
  });

  it('pages GET /v1/runs by cursor: every run once, newest first, and a bad limit or cursor is a 400', async () => {
    const all = (await (await api('/v1/runs?limit=500')).json()) as Array<{ id: string }>;
    expect(all.length).toBeGreaterThanOrEqual(3);
    const paged: string[] = [];
    let next: string | null = '/v1/runs?limit=2';
    while (next) {
      const answer = await api(next);
      paged.push(...((await answer.json()) as Array<{ id: string }>).map((r) => r.id));
      const cursor = answer.headers.get('x-next-cursor');
      const link = answer.headers.get('link');
      next = cursor ? `/v1/runs?limit=2&cursor=${cursor}` : null;
      if (cursor) expect(link).toBe(`</v1/runs?limit=2&cursor=${cursor}>; rel="next"`);
    }
    expect(paged).toEqual(all.map((r) => r.id));
    expect((await api('/v1/runs?limit=0')).status).toBe(400);
    expect((await api('/v1/runs?limit=501')).status).toBe(400);
    expect((await api('/v1/runs?cursor=no-such-run')).status).toBe(400);
  });

  it('shows a campaign with its newest 100 runs and links to the rest, not every run it ever had', async () => {
    const created = (await (await api('/v1/campaigns', { body: campaign() })).json()) as {
      campaignId: string;
      runId: string;
    };
    await waitForRun(sut.runs, created.runId, { timeoutMs: 30_000 });
    // A scheduled campaign's history, oldest first, each run ended in the transaction that stored
    // it (so no plan is ever owed for one).
    const older = await sut.database.transaction(async (tx) => {
      const runs = createRepositories(tx).runs;
      const ids: string[] = [];
      for (let i = 0; i < 104; i++) {
        const run = await runs.create({
          campaignId: created.campaignId,
          trigger: 'schedule',
          createdAt: 1_000 + i,
        });
        await runs.transition(run.id, 'aborted', { reason: 'history' });
        ids.push(run.id);
      }
      return ids;
    });
    const newestFirst = [created.runId, ...older.reverse()];
    type CampaignView = { runs: Array<{ id: string }>; links: { runs: string; moreRuns?: string } };
    const view = (await (await api(`/v1/campaigns/${created.campaignId}`)).json()) as CampaignView;
    expect(view.runs.map((r) => r.id)).toEqual(newestFirst.slice(0, 100));
    expect(view.links.runs).toBe(`/v1/runs?campaignId=${created.campaignId}`);
    const rest = (await (await api(view.links.moreRuns!)).json()) as Array<{ id: string }>;
    expect(rest.map((r) => r.id)).toEqual(newestFirst.slice(100));
    const all = (await (await api(`${view.links.runs}&limit=500`)).json()) as Array<{ id: string }>;
    expect(all.map((r) => r.id)).toEqual(newestFirst);
  });
});
