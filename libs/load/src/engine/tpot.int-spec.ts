import { CampaignSpecSchema, type RequestRecord } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { runShard } from './run-shard';

describe('tpotMs on request records', () => {
  let sim: SimTarget;
  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.2 } });
  });
  afterAll(() => sim.close());

  it('fills (E2E - TTFT) / (output tokens - 1) for streamed chat completions', async () => {
    const records: RequestRecord[] = [];
    const spec = CampaignSpecSchema.parse({
      name: 'tpot',
      target: { baseUrl: `${sim.url}/v1` },
      scenario: {
        type: 'chat',
        model: sim.config.model,
        prompts: ['say something about tokens'],
        maxTokens: 16,
      },
      load: { concurrency: 2, durationMs: 300 },
    });
    const sut = await runShard({
      spec,
      shard: { index: 0, count: 1 },
      runId: 'r',
      campaignId: 'c',
      generatorId: 'g',
      sink: { record: (r) => void records.push(r), window: () => undefined },
      signal: new AbortController().signal,
    });
    expect(sut.errors).toBe(0);
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) {
      const tokens = record.usage?.completionTokens ?? record.outputTokensClient;
      expect(tokens).toBeGreaterThan(1);
      expect(record.tpotMs).toBeCloseTo((record.e2eMs - record.ttftMs!) / (tokens - 1), 6);
      // The sim's decode step is >= 10 model ms (x 0.2 wall): a token every >= 2 ms.
      expect(record.tpotMs!).toBeGreaterThan(1.5);
    }
  });
});
