import { CampaignSpecSchema, type RequestRecord } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { UseLiteEmbedder } from '@fathom/semantic';
import { runShard } from '../engine/run-shard';

const PROMPTS = [
  'Please explain the main method to fix a big problem quickly and check the result before you send it.',
  'I want to buy a small car; help me choose a good one and explain why the price is important.',
  'Tell me a story about dragons.',
];

describe('adversarial-entropy perturbation against the simulated target', () => {
  let sim: SimTarget;
  beforeAll(async () => {
    sim = await startSimTarget({
      port: 0,
      host: '127.0.0.1',
      // Planted hallucinated spans in half the responses: a variant's risk can move either way.
      config: { seed: 11, timeScale: 0.05, output: { hallucinationRate: 0.5 } },
    });
  });
  afterAll(() => sim.close());

  it('probes entropy peaks, sends only the KL-bounded variants in the load and reports the risk before and after', async () => {
    const records: RequestRecord[] = [];
    const result = await runShard({
      spec: CampaignSpecSchema.parse({
        name: 'adversarial',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: {
          type: 'chat',
          model: 'fathom-sim-8b',
          prompts: PROMPTS,
          maxTokens: 32,
          perturbation: { kind: 'adversarial-entropy', variants: 6, prompts: 3 },
        },
        load: { concurrency: 8, durationMs: 2500, recordSampleRate: 1 },
      }),
      shard: { index: 0, count: 1 },
      runId: 'adv',
      campaignId: 'c',
      generatorId: 'g',
      sink: { record: (r) => records.push(r), window: () => undefined },
      signal: new AbortController().signal,
      embedder: new UseLiteEmbedder(),
    });
    const probes = result.adversarial ?? [];
    expect(probes.map((p) => p.status)).toEqual(['ok', 'ok', 'skipped']);
    expect(probes[2].reason).toMatch(/fewer than 3 words with a known synonym/);
    const variants = probes.flatMap((p) => p.variants);
    console.info(
      'adversarial-entropy vs sim',
      probes.map((p) => ({
        peak: p.peak,
        before: p.before?.maxWindowMeanBits,
        variants: JSON.stringify(
          p.variants.map((v) => [v.substitutions.length, +v.kl.toFixed(3), v.kept, v.deltaBits]),
        ),
      })),
    );
    for (const p of probes.slice(0, 2)) {
      expect(p.peak).not.toBeNull();
      expect(p.before?.status).toBe('ok');
    }
    for (const v of variants) {
      expect(v.substitutions.length).toBeGreaterThanOrEqual(3);
      expect(v.substitutions.length).toBeLessThanOrEqual(7);
      expect(v.kept).toBe(v.kl <= 0.15);
    }
    const kept = variants.filter((v) => v.kept);
    expect(kept.length).toBeGreaterThan(0);
    const sentPrompts = new Set(records.map((r) => r.prompt));
    for (const v of kept) {
      expect(v.after?.status).toBe('ok');
      expect(v.deltaBits).not.toBeNull();
      expect(v.riskMoved).not.toBeNull();
      expect(sentPrompts.has(v.text)).toBe(true);
    }
    for (const v of variants.filter((x) => !x.kept)) expect(sentPrompts.has(v.text)).toBe(false);
    // The originals are still in the load, beside the variants.
    for (const p of PROMPTS) expect(sentPrompts.has(p)).toBe(true);
    expect(result.errors).toBe(0);
  }, 60000);
});
