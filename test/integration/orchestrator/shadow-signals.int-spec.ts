import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { startShadowGateway, type ShadowGateway } from '@fathom/orchestrator';
import type { ShadowLiveStatus } from '@fathom/contracts';
import type { StoredShadowCampaign } from '@fathom/storage';

// Model ms -> wall ms: a 32-token answer in about 50 ms wall.
const TIME_SCALE = 0.1;
const WINDOW_MS = 2000;

const BIN = join(__dirname, '..', '..', '..', 'bin', 'fathom.js');

const TOOLS: ChatCompletionCreateParamsNonStreaming['tools'] = [
  {
    type: 'function',
    function: {
      name: 'lookup_order',
      parameters: {
        type: 'object',
        properties: { order_id: { type: 'string' }, verbose: { type: 'boolean' } },
        required: ['order_id'],
      },
    },
  },
];

/**
 * Shadow comparisons beyond latency, through the gateway with the official openai client:
 * primary and secondary are two simulators, each candidate a third with a planted regression
 * (hallucination rate; tool-call arguments drifting from the tool's parameters; a candidate that
 * starts refusing). The regression
 * is named within a minute, a clean candidate raises nothing, the client gets the primary's
 * answers, and a sustained regression opens the candidate's breaker in the analyzer, which sheds
 * the candidate to a probe trickle until it closes again once the candidate recovers.
 */
describe('shadow campaigns: hallucination, tool-call, schema and refusal regressions, and the analyzer', () => {
  let primary: SimTarget;
  let secondary: SimTarget;
  let clean: SimTarget;
  let hallucinating: SimTarget;
  let drifting: SimTarget;
  let refusing: SimTarget;
  let sut: EmbeddedFathom;

  beforeAll(async () => {
    const sim = (faults: unknown[] = []) =>
      startSimTarget({ port: 0, config: { timeScale: TIME_SCALE, faults } as never });
    [primary, secondary, clean, hallucinating, drifting, refusing] = await Promise.all([
      sim(),
      sim(),
      sim(),
      // Every answer carries a planted hallucinated span (the others: one in five).
      sim([{ kind: 'hallucination_rate', rate: 1 }]),
      sim([{ kind: 'tool_call_drift', mode: 'type_change' }]),
      // Clean until the test plants refusal_rate in it.
      sim(),
    ]);
    sut = await startEmbedded({ dataDir: null, logLevels: false });
    // Starting five services and PGlite takes seconds alone, a minute on a loaded machine.
  }, 120_000);

  afterAll(async () => {
    await sut?.close();
    await Promise.all([primary, secondary, clean, hallucinating, drifting, refusing].map((s) => s?.close()));
  });

  async function liveCampaign(candidate: SimTarget): Promise<string> {
    const created = await fetch(`${sut.url}/v1/shadow-campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'live check',
        primary: { baseUrl: `${primary.url}/v1` },
        secondary: { baseUrl: `${secondary.url}/v1` },
        candidate: { baseUrl: `${candidate.url}/v1` },
        model: 'fathom-sim-8b',
        source: { type: 'live', maxRatePerSec: 100, windowMs: WINDOW_MS },
        concurrency: 8,
        maxTokens: 32,
        onRegression: { windows: 2 },
      }),
    });
    expect(created.status).toBe(201);
    return ((await created.json()) as { id: string }).id;
  }

  const live = async (id: string): Promise<ShadowLiveStatus | undefined> =>
    (
      (await (await fetch(`${sut.url}/v1/shadow-campaigns/${id}/report`)).json()) as {
        report: StoredShadowCampaign['report'];
      }
    ).report?.live;

  const gateway = (id: string) =>
    startShadowGateway({
      host: '127.0.0.1',
      port: 0,
      primary: primary.url,
      mirror: { url: `${sut.url}/v1/shadow-campaigns/${id}/mirror` },
    });

  /** What a production client sends: plain, streamed and tool-calling chat, all with the openai client. */
  async function drive(baseURL: string, requests: number, withTools: boolean): Promise<string[]> {
    const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'prod-key', maxRetries: 0 });
    // Three production clients at once, each answer kept in request order.
    const answers: string[] = [];
    let next = 0;
    const one = async (i: number) => {
      const messages = [{ role: 'user' as const, content: `Question ${i % 6}: where is order A-${i % 6}?` }];
      if (withTools) {
        const answer = await client.chat.completions.create({
          model: 'fathom-sim-8b',
          messages,
          tools: TOOLS,
          tool_choice: 'required',
          max_tokens: 32,
        });
        answers[i] = JSON.stringify(answer.choices[0].message);
      } else if (i % 2 === 0) {
        const answer = await client.chat.completions.create({
          model: 'fathom-sim-8b',
          messages,
          max_tokens: 32,
        });
        answers[i] = JSON.stringify(answer.choices[0].message);
      } else {
        const stream = await client.chat.completions.create({
          model: 'fathom-sim-8b',
          messages,
          max_tokens: 32,
          stream: true,
        });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
        answers[i] = text;
      }
    };
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        while (next < requests) await one(next++);
      }),
    );
    return answers;
  }

  const metricsOf = (status: ShadowLiveStatus) =>
    new Set(status.windows.flatMap((w) => w.groups.flatMap((g) => g.differences.map((d) => d.metric))));

  /** Drives every gateway until `done` holds (or a minute passes); returns how long it took. */
  async function until(
    gateways: Array<{ g: ShadowGateway; tools: boolean }>,
    done: () => Promise<boolean>,
  ): Promise<number> {
    const started = Date.now();
    while (!(await done()) && Date.now() - started < 60_000)
      await Promise.all(gateways.map(({ g, tools }) => drive(g.url, 9, tools)));
    return Date.now() - started;
  }

  it('names a hallucination-rate regression within a minute, opens the candidate breaker in the analyzer and closes it when the candidate recovers', async () => {
    const regressed = await liveCampaign(hallucinating);
    const cleanId = await liveCampaign(clean);
    const gateways = await Promise.all([regressed, cleanId].map(gateway));
    try {
      // What the client gets through the gateway is what the primary answers directly.
      const [through, direct] = [await drive(gateways[0].url, 4, false), await drive(primary.url, 4, false)];
      expect(through).toEqual(direct);

      const tookMs = await until(
        gateways.map((g) => ({ g, tools: false })),
        async () => (await live(regressed))?.analyzerBreaker?.state === 'open',
      );
      expect(tookMs).toBeLessThan(60_000);
      const status = (await live(regressed))!;
      expect(status.tier).toBe('regressed');
      expect(metricsOf(status)).toContain('hallucinationRisk');
      expect(status.analyzerBreaker!.changes.at(-1)).toMatchObject({
        from: 'closed',
        to: 'open',
        reason: expect.stringContaining('hallucinationRisk'),
      });
      const cleanStatus = (await live(cleanId))!;
      expect(cleanStatus.replayed).toBeGreaterThan(0);
      expect([...metricsOf(cleanStatus)]).toEqual([]);
      expect(cleanStatus.tier).toBe('ok');
      expect(cleanStatus.analyzerBreaker).toEqual({ state: 'closed', changes: [] });

      // The candidate recovers: clean windows probe the half-open breaker and close it.
      expect(
        (await fetch(`${hallucinating.url}/sim/faults/hallucination_rate`, { method: 'DELETE' })).status,
      ).toBe(200);
      await until(
        [{ g: gateways[0], tools: false }],
        async () => (await live(regressed))?.analyzerBreaker?.state === 'closed',
      );
      const recovered = (await live(regressed))!;
      expect(recovered.analyzerBreaker!.changes.map((c) => c.to)).toEqual(['open', 'half-open', 'closed']);
      expect(recovered.tier).toBe('ok');
      // Open and half-open, the candidate got a probe trickle; the rest was shed.
      expect(recovered.shed.analyzerBreaker).toBeGreaterThan(0);

      // The same over time as one page: the regression, its noise floor and the breaker.
      const page = await fetch(`${sut.url}/v1/shadow-campaigns/${regressed}/report?format=html`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await page.text();
      const risk = /<figure class="chart-box" data-metric="hallucinationRisk">([\s\S]*?)<\/figure>/.exec(
        html,
      )![1];
      expect(risk).toMatch(/[1-9]\d*\/\d+ windows beyond the noise/);
      expect(risk).toContain('<circle class="beyond"');
      expect(html).toMatch(/<td>closed<\/td><td>open<\/td><td>shadow-regression: /);
      expect((await fetch(`${sut.url}/v1/shadow-campaigns/${regressed}/report?format=pdf`)).status).toBe(400);
      // And through the CLI (the built bin/fathom.js, `npm run build`).
      const dir = await mkdtemp(join(tmpdir(), 'fathom-shadow-report-'));
      try {
        const out = join(dir, 'shadow.html');
        const cli = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
          execFile(
            process.execPath,
            [BIN, 'report', regressed, '--shadow', '--api', sut.url, '--out', `html=${out}`],
            { timeout: 60_000 },
            (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
          ),
        );
        expect(cli).toMatchObject({ code: 0, stdout: `wrote ${out}\n` });
        expect(await readFile(out, 'utf8')).toContain('data-metric="hallucinationRisk"');
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    } finally {
      await Promise.all(gateways.map((g) => g.close()));
      await Promise.all(
        [regressed, cleanId].map((id) =>
          fetch(`${sut.url}/v1/shadow-campaigns/${id}/stop`, { method: 'POST' }),
        ),
      );
    }
  }, 150_000);

  it('names tool-call argument drift and the schema violation it is, and a clean candidate raises nothing', async () => {
    const regressed = await liveCampaign(drifting);
    const cleanId = await liveCampaign(clean);
    const gateways = await Promise.all([regressed, cleanId].map(gateway));
    try {
      const [through, direct] = [await drive(gateways[0].url, 3, true), await drive(primary.url, 3, true)];
      expect(through.map((m) => JSON.parse(m) as unknown)).toEqual(
        direct.map((m) => JSON.parse(m) as unknown),
      );
      const tookMs = await until(
        gateways.map((g) => ({ g, tools: true })),
        async () => (await live(regressed))?.tier === 'regressed',
      );
      expect(tookMs).toBeLessThan(60_000);
      const status = (await live(regressed))!;
      const named = metricsOf(status);
      expect(named).toContain('toolArguments');
      expect(named).toContain('schemaViolations');
      // Same tool called as often: the names and count do not differ.
      expect(named).not.toContain('toolCalls');
      const cleanStatus = (await live(cleanId))!;
      expect(cleanStatus.replayed).toBeGreaterThan(0);
      expect([...metricsOf(cleanStatus)]).toEqual([]);
      expect(cleanStatus.tier).toBe('ok');
    } finally {
      await Promise.all(gateways.map((g) => g.close()));
      await Promise.all(
        [regressed, cleanId].map((id) =>
          fetch(`${sut.url}/v1/shadow-campaigns/${id}/stop`, { method: 'POST' }),
        ),
      );
    }
  }, 90_000);
  it('names a candidate that starts refusing, in the analyzer too, and a clean candidate raises nothing', async () => {
    const regressed = await liveCampaign(refusing);
    const cleanId = await liveCampaign(clean);
    const gateways = await Promise.all([regressed, cleanId].map(gateway));
    try {
      // Half of the candidate's chat answers become OpenAI-shaped refusals from now on.
      const planted = await fetch(`${refusing.url}/sim/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'refusal_rate', rate: 0.5 }),
      });
      expect(planted.status).toBe(200);
      // The client still gets the primary's answers, none refused.
      const [through, direct] = [await drive(gateways[0].url, 4, false), await drive(primary.url, 4, false)];
      expect(through).toEqual(direct);

      const tookMs = await until(
        gateways.map((g) => ({ g, tools: false })),
        async () => (await live(regressed))?.analyzerBreaker?.state === 'open',
      );
      expect(tookMs).toBeLessThan(60_000);
      const status = (await live(regressed))!;
      expect(status.tier).toBe('regressed');
      expect(metricsOf(status)).toContain('refusals');
      // The window's signal named it, and the analyzer opened the candidate's breaker on it.
      expect(status.analyzerBreaker!.changes.at(-1)).toMatchObject({
        from: 'closed',
        to: 'open',
        reason: expect.stringContaining('refusals +'),
      });
      const cleanStatus = (await live(cleanId))!;
      expect(cleanStatus.replayed).toBeGreaterThan(0);
      expect([...metricsOf(cleanStatus)]).toEqual([]);
      expect(cleanStatus.tier).toBe('ok');
      expect(cleanStatus.analyzerBreaker).toEqual({ state: 'closed', changes: [] });
      expect(cleanStatus.shed.analyzerBreaker).toBe(0);

      // Still refusing, the breaker stays open and sheds the candidate down to a probe trickle
      // (at most 10 replays a window for the one group), and those windows are still judged.
      const lastEnded = status.windows.at(-1)!.endedAt;
      const windowsSince = async () =>
        ((await live(regressed))?.windows ?? []).filter((w) => w.endedAt > lastEnded);
      await until([{ g: gateways[0], tools: false }], async () => (await windowsSince()).length >= 2);
      const shedding = (await live(regressed))!;
      expect(shedding.analyzerBreaker!.state).toBe('open');
      expect(shedding.shed.analyzerBreaker).toBeGreaterThan(status.shed.analyzerBreaker ?? 0);
      const since = await windowsSince();
      expect(Math.max(...since.map((w) => w.samples))).toBeLessThanOrEqual(10);
      expect(since.some((w) => w.samples >= 5 && w.regressed)).toBe(true);
    } finally {
      await Promise.all(gateways.map((g) => g.close()));
      await Promise.all(
        [regressed, cleanId].map((id) =>
          fetch(`${sut.url}/v1/shadow-campaigns/${id}/stop`, { method: 'POST' }),
        ),
      );
    }
  }, 90_000);
});
