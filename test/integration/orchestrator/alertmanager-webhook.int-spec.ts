import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';

const SECRET = 'alert-webhook-secret-for-tests';
const fixture = (name: string) =>
  JSON.parse(readFileSync(join(__dirname, '__fixtures__', 'alertmanager', name), 'utf8')) as Record<
    string,
    unknown
  >;

describe('POST /v1/hooks/alertmanager', () => {
  let sim: SimTarget;
  let sut: EmbeddedFathom;
  let campaignId: string;
  const saved = process.env.FATHOM_ALERT_WEBHOOK_SECRET;

  const hook = (body: unknown, authorization: string | null = `Bearer ${SECRET}`) =>
    fetch(`${sut.url}/v1/hooks/alertmanager`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    process.env.FATHOM_ALERT_WEBHOOK_SECRET = SECRET;
    process.env.FATHOM_ANALYZER_SETTLE_MS = '1000';
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } });
    sut = await startEmbedded({ dataDir: null, logLevels: false });
    // The campaign an alert reruns: stored once (its API-triggered first run aborted at once).
    const created = await fetch(`${sut.url}/v1/campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'chat latency under alert',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'chat', model: 'fathom-sim-8b', prompts: ['hello'], maxTokens: 8 },
        load: { concurrency: 2, durationMs: 60_000 },
      }),
    });
    const body = (await created.json()) as { campaignId: string; runId: string };
    campaignId = body.campaignId;
    await sut.campaigns.abort(body.runId, 'setup');
    const rule = await fetch(`${sut.url}/v1/alert-rules`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'p99 page',
        matchLabels: { alertname: 'LlmP99LatencyHigh', service: 'chat-llm' },
        campaignId,
      }),
    });
    expect(rule.status).toBe(201);
  });

  afterAll(async () => {
    await sut?.close();
    await sim?.close();
    if (saved === undefined) delete process.env.FATHOM_ALERT_WEBHOOK_SECRET;
    else process.env.FATHOM_ALERT_WEBHOOK_SECRET = saved;
  });

  const alertRuns = async () => (await sut.runs.list({ campaignId })).filter((r) => r.trigger === 'alert');

  it('refuses a webhook without the secret, or with a wrong one, and starts nothing', async () => {
    expect((await hook(fixture('firing.v4.json'), null)).status).toBe(401);
    expect((await hook(fixture('firing.v4.json'), 'Bearer wrong-secret-of-same-len')).status).toBe(401);
    expect(await alertRuns()).toEqual([]);
  });

  it('names the bad field of a payload that is not version 4', async () => {
    const response = await hook({ ...fixture('firing.v4.json'), version: '3' });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { issues: { field: string }[] }).issues.map((i) => i.field)).toEqual([
      'version',
    ]);
  });

  it('starts the mapped campaign once for 100 concurrent copies of the firing payload, and the resolved one aborts it', async () => {
    const responses = await Promise.all(Array.from({ length: 100 }, () => hook(fixture('firing.v4.json'))));
    expect(responses.map((r) => r.status)).toEqual(Array(100).fill(200));
    const outcomes = (await Promise.all(responses.map((r) => r.json()))) as Array<{
      started: unknown[];
      duplicates: number;
    }>;
    expect(outcomes.reduce((n, o) => n + o.started.length, 0)).toBe(1);
    expect(outcomes.reduce((n, o) => n + o.duplicates, 0)).toBe(99);

    const runs = await alertRuns();
    expect(runs).toHaveLength(1);
    expect(runs[0].reason).toBe(
      'alert LlmP99LatencyHigh firing (fingerprint 3c1a9be2f04d7e15, rule p99 page)',
    );
    expect(['pending', 'running']).toContain(runs[0].status);

    const resolved = await hook(fixture('resolved.v4.json'));
    expect(resolved.status).toBe(200);
    expect(((await resolved.json()) as { aborted: string[] }).aborted).toEqual([runs[0].id]);
    expect(await sut.runs.get(runs[0].id)).toMatchObject({
      status: 'aborted',
      reason: 'alert LlmP99LatencyHigh resolved',
    });

    // The same episode repeated after it resolved starts nothing; a new episode (new startsAt) does.
    await hook(fixture('firing.v4.json'));
    expect(await alertRuns()).toHaveLength(1);
    const again = fixture('firing.v4.json') as { alerts: Array<Record<string, unknown>> };
    again.alerts[0].startsAt = '2026-05-04T11:00:00.000Z';
    const second = (await (await hook(again)).json()) as { started: Array<{ runId: string }> };
    expect(second.started).toHaveLength(1);
    expect(await alertRuns()).toHaveLength(2);
    await sut.campaigns.abort(second.started[0].runId, 'test over');
  }, 30_000);

  type Outcome = {
    started: Array<{ runId: string }>;
    coalesced: Array<{ runId: string; fingerprint: string }>;
    aborted: string[];
  };
  /** One alert of the rule's kind, by fingerprint, firing or resolved. */
  const alertOf = async (fingerprint: string, status: 'firing' | 'resolved'): Promise<Outcome> => {
    const payload = fixture(`${status}.v4.json`) as { alerts: Array<Record<string, unknown>> };
    payload.alerts[0].fingerprint = fingerprint;
    payload.alerts[0].startsAt = '2026-05-04T12:00:00.000Z';
    const response = await hook(payload);
    expect(response.status).toBe(200);
    return (await response.json()) as Outcome;
  };
  const openRuns = () => sut.runs.list({ campaignId, status: ['pending', 'running'] });

  it('starts one run for ten different alerts of one campaign firing at once; the others join it until the last resolves', async () => {
    expect(await openRuns()).toEqual([]);
    const fingerprints = Array.from({ length: 10 }, (_, i) => `c0a1e5ce0000000${i}`);

    const outcomes = await Promise.all(fingerprints.map((f) => alertOf(f, 'firing')));

    const started = outcomes.flatMap((o) => o.started);
    const coalesced = outcomes.flatMap((o) => o.coalesced);
    expect(started).toHaveLength(1);
    expect(coalesced).toHaveLength(9);
    const runId = started[0].runId;
    expect(coalesced.every((c) => c.runId === runId)).toBe(true);
    expect((await openRuns()).map((r) => r.id)).toEqual([runId]);
    const links = await sut.database.query<{ run_id: string; coalesced: boolean }>(
      `SELECT run_id, coalesced FROM alert_triggers WHERE fingerprint LIKE 'c0a1e5ce%'`,
    );
    expect(links.filter((l) => l.run_id === runId)).toHaveLength(10);
    expect(links.filter((l) => l.coalesced)).toHaveLength(9);

    // The alert that started the run resolves first: nine alerts still hold it.
    const starter = fingerprints.find((f) => outcomes[fingerprints.indexOf(f)].started.length === 1)!;
    const others = fingerprints.filter((f) => f !== starter);
    expect((await alertOf(starter, 'resolved')).aborted).toEqual([]);
    for (const f of others.slice(0, -1)) expect((await alertOf(f, 'resolved')).aborted).toEqual([]);
    expect((await sut.runs.get(runId))?.status).not.toBe('aborted');
    expect((await alertOf(others[others.length - 1], 'resolved')).aborted).toEqual([runId]);
    expect(await openRuns()).toEqual([]);
  }, 30_000);

  it('coalesces a firing alert into a run the API started, and its resolution leaves that run alone', async () => {
    const api = await sut.campaigns.startStored(campaignId, 'api', null);
    const alertRunsBefore = (await alertRuns()).length;

    const firing = await alertOf('a91c0a1e5ce00001', 'firing');

    expect(firing.started).toEqual([]);
    expect(firing.coalesced).toEqual([expect.objectContaining({ runId: api!.runId })]);
    expect(await alertRuns()).toHaveLength(alertRunsBefore);
    expect((await alertOf('a91c0a1e5ce00001', 'resolved')).aborted).toEqual([]);
    expect(['pending', 'running']).toContain((await sut.runs.get(api!.runId))?.status);
    await sut.campaigns.abort(api!.runId, 'test over');
  });

  it('refuses an alert rule or a schedule for an unknown campaign, naming campaignId', async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${sut.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const rule = await post('/v1/alert-rules', {
      name: 'orphan',
      matchLabels: { alertname: 'X' },
      campaignId: 'no-such-campaign',
    });
    const schedule = await post('/v1/schedules', {
      campaignId: 'no-such-campaign',
      mode: 'interval',
      intervalMs: 1000,
    });
    for (const response of [rule, schedule]) {
      expect(response.status).toBe(400);
      expect(((await response.json()) as { issues: unknown[] }).issues).toEqual([
        { field: 'campaignId', message: 'no campaign no-such-campaign' },
      ]);
    }
  });

  it('starts nothing for an alert no rule matches', async () => {
    const other = fixture('firing.v4.json') as {
      alerts: Array<{ labels: Record<string, string>; fingerprint: string }>;
    };
    other.alerts[0].labels = { alertname: 'DiskFull' };
    other.alerts[0].fingerprint = 'ffff0000ffff0000';
    const outcome = (await (await hook(other)).json()) as { unmatched: number; started: unknown[] };
    expect(outcome).toMatchObject({ unmatched: 1, started: [] });
  });
});
