import { CampaignSpecSchema, type RequestRecord } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { runShard } from '../engine/run-shard';

async function records(sim: SimTarget, scenario: Record<string, unknown>): Promise<RequestRecord[]> {
  const out: RequestRecord[] = [];
  await runShard({
    spec: CampaignSpecSchema.parse({
      name: 'driver',
      target: { baseUrl: `${sim.url}/v1` },
      scenario: {
        type: 'chat',
        model: sim.config.model,
        prompts: ['Tell me about rivers.'],
        maxTokens: 6,
        ...scenario,
      },
      load: { concurrency: 1, durationMs: 250 },
    }),
    shard: { index: 0, count: 1 },
    runId: 'r',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: (r) => void out.push(r), window: () => undefined },
    signal: new AbortController().signal,
  });
  return out;
}

describe('OpenAI driver against the simulated target', () => {
  let sim: SimTarget;
  beforeAll(async () => {
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.1 } });
  });
  afterAll(() => sim.close());

  it.each([
    ['chat, streamed, with logprobs', { logprobs: true, topLogprobs: 2 }],
    ['chat, not streamed', { stream: false }],
    ['completions, streamed', { endpoint: 'completions' }],
    ['completions, not streamed', { endpoint: 'completions', stream: false }],
  ])('%s: usage, content, finish reason and client token count', async (_name, scenario) => {
    const sut = await records(sim, scenario);
    expect(sut.length).toBeGreaterThan(0);
    for (const record of sut) {
      expect(record.errorClass).toBeNull();
      expect(record.usage?.completionTokens).toBe(6);
      expect(record.finishReason).toBe('length');
      expect(record.content.length).toBeGreaterThan(0);
      expect(record.outputTokensClient).toBeGreaterThan(0);
      if ((scenario as { stream?: boolean }).stream === false) expect(record.ttftMs).toBeNull();
      else expect(record.chunkOffsetsMs).toHaveLength(6);
    }
    if ((scenario as { logprobs?: boolean }).logprobs) {
      expect(sut[0].logprobs).toHaveLength(6);
      expect(sut[0].logprobs![0].top).toHaveLength(2);
    }
  });
});
