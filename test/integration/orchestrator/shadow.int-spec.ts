import { startSimTarget, type SimTarget } from '@fathom/sim';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import type { StoredShadowCampaign } from '@fathom/storage';

// Model ms -> wall ms; 0.1 keeps a 32-token answer near 40 ms wall.
const TIME_SCALE = 0.1;
const INTENTS = ['document-qa', 'summary'];
const requests = Array.from({ length: 16 }, (_, i) => ({
  intent: INTENTS[i % 2],
  body: {
    model: 'prod-model',
    messages: [
      {
        role: 'user',
        content:
          i === 0
            ? 'Summarise the ticket from jane.doe@example.com, key sk-live_4f9a8b7c6d5e4f3a, card 4111111111111111.'
            : `Question ${String.fromCharCode(97 + i)}: explain the quarterly numbers for team ${String.fromCharCode(65 + i)}.`,
      },
    ],
  },
}));

describe('shadow testing against three simulated targets', () => {
  let primary: SimTarget;
  let secondary: SimTarget;
  let identical: SimTarget;
  let hallucinating: SimTarget;
  let slower: SimTarget;
  let sut: EmbeddedFathom;

  beforeAll(async () => {
    const sim = (faults: unknown[] = []) =>
      startSimTarget({ port: 0, config: { timeScale: TIME_SCALE, faults } as never });
    [primary, secondary, identical, hallucinating, slower] = await Promise.all([
      sim(),
      sim(),
      sim(),
      sim([{ kind: 'hallucination_rate', rate: 1 }]),
      // Slower decode: every engine step takes 30 model ms longer.
      sim([{ kind: 'latency_spike', addMs: 30 }]),
    ]);
    sut = await startEmbedded({ dataDir: null, logLevels: false });
  });

  afterAll(async () => {
    await sut?.close();
    await Promise.all([primary, secondary, identical, hallucinating, slower].map((s) => s?.close()));
  });

  async function shadow(candidate: SimTarget): Promise<StoredShadowCampaign> {
    const created = await fetch(`${sut.url}/v1/shadow-campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'candidate check',
        primary: { baseUrl: `${primary.url}/v1` },
        secondary: { baseUrl: `${secondary.url}/v1` },
        candidate: { baseUrl: `${candidate.url}/v1` },
        model: 'fathom-sim-8b',
        embeddings: { baseUrl: `${primary.url}/v1`, model: 'fathom-sim-8b' },
        source: { type: 'inline', requests },
        concurrency: 2,
        maxTokens: 32,
      }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const deadline = Date.now() + 30_000;
    for (;;) {
      const campaign = (await (
        await fetch(`${sut.url}/v1/shadow-campaigns/${id}`)
      ).json()) as StoredShadowCampaign;
      if (campaign.status !== 'running') return campaign;
      if (Date.now() > deadline) throw new Error('shadow campaign did not finish');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const differences = (c: StoredShadowCampaign) =>
    (c.report?.groups ?? []).flatMap((g) => g.differences.map((d) => `${g.intent}:${d.metric}`)).sort();

  it('reports no difference for a candidate identical to the primary', async () => {
    const campaign = await shadow(identical);
    expect(campaign.reason).toBeNull();
    expect(campaign).toMatchObject({ status: 'completed', report: { samples: 16, similarity: 'compared' } });
    expect(campaign.report?.groups.map((g) => [g.endpoint, g.intent, g.samples]).sort()).toEqual([
      ['/v1/chat/completions', 'document-qa', 8],
      ['/v1/chat/completions', 'summary', 8],
    ]);
    expect(differences(campaign)).toEqual([]);
  }, 40_000);

  it('reports a raised hallucination rate, with the noise floor beside it', async () => {
    const campaign = await shadow(hallucinating);
    // Latency is judged on 8 samples an intent: a planted span changes the generated text, so a
    // few milliseconds of latency difference may come with it; the risk difference must.
    expect(differences(campaign).filter((d) => !d.endsWith(':e2eMs') && !d.endsWith(':ttftMs'))).toEqual([
      'document-qa:hallucinationRisk',
      'summary:hallucinationRisk',
    ]);
    for (const group of campaign.report?.groups ?? []) {
      const risk = group.differences.find((d) => d.metric === 'hallucinationRisk')!;
      expect(risk.noiseFloor).toBeGreaterThanOrEqual(0);
      expect(risk.candidateDifference).toBeGreaterThan(risk.noiseFloor);
    }
  }, 40_000);

  it('reports a slower decode as end-to-end latency beyond the noise floor', async () => {
    const campaign = await shadow(slower);
    const latency = (campaign.report?.groups ?? []).map((g) => g.metrics.find((m) => m.metric === 'e2eMs'));
    for (const m of latency) {
      expect(m?.beyondNoise).toBe(true);
      expect(m?.candidateDifference).toBeGreaterThan(m?.noiseFloor ?? Infinity);
    }
    expect(differences(campaign)).not.toContain('summary:hallucinationRisk');
    console.log(
      `slower decode: ${latency.map((m) => `+${m?.candidateDifference.toFixed(1)} ms vs floor ${m?.noiseFloor.toFixed(1)} ms`).join(', ')}`,
    );
  }, 40_000);

  it('stores requests only after redaction', async () => {
    const campaign = await shadow(identical);
    const samples = (await (
      await fetch(`${sut.url}/v1/shadow-campaigns/${campaign.id}/samples`)
    ).json()) as Array<{
      request: unknown;
    }>;
    const stored = JSON.stringify(samples.map((s) => s.request));
    expect(stored).not.toMatch(/jane\.doe|sk-live|4111111111111111/);
    expect(stored).toContain('Summarise the ticket from [EMAIL], key [KEY], card [NUMBER].');
  }, 40_000);

  it('is described in the OpenAPI document served at /docs', async () => {
    const doc = (await (await fetch(`${sut.url}/docs`)).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/shadow-campaigns',
        '/v1/hooks/alertmanager',
        '/v1/runs/{id}/abort',
        '/v1/schedules',
      ]),
    );
  });
});
