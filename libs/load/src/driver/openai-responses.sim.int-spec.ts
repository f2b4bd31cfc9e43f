import { CampaignSpecSchema, type RequestRecord } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { runShard } from '../engine/run-shard';

async function run(sim: SimTarget, stream: boolean) {
  const records: RequestRecord[] = [];
  const result = await runShard({
    spec: CampaignSpecSchema.parse({
      name: 'responses',
      target: { baseUrl: `${sim.url}/v1` },
      scenario: {
        type: 'chat',
        endpoint: 'responses',
        model: 'fathom-sim-8b',
        prompts: ['Explain prefix caching.'],
        system: 'Be brief.',
        maxTokens: 12,
        stream,
      },
      load: { concurrency: 2, durationMs: 500 },
    }),
    shard: { index: 0, count: 1 },
    runId: 'resp',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: (r) => records.push(r), window: () => undefined },
    signal: new AbortController().signal,
  });
  return { result, records };
}

describe('the OpenAI Responses API as a driver (against the simulated target)', () => {
  let sim: SimTarget;
  beforeAll(async () => {
    sim = await startSimTarget({
      port: 0,
      host: '127.0.0.1',
      config: { seed: 4, timeScale: 0.1, output: { hallucinationRate: 0 } },
    });
  });
  afterAll(() => sim.close());

  it('streams response.output_text.delta events: TTFT, inter-token gaps, usage and the incomplete status at max_output_tokens', async () => {
    const { result, records } = await run(sim, true);
    expect(result.errors).toBe(0);
    expect(records.length).toBeGreaterThan(1);
    for (const r of records) {
      expect(r.ttftMs).not.toBeNull();
      expect(r.chunkOffsetsMs).toHaveLength(12);
      expect(r.usage).toMatchObject({ completionTokens: 12 });
      expect(r.usage!.promptTokens).toBeGreaterThan(0);
      expect(r.outputTokensClient).toBeGreaterThan(0);
      expect(r.content.length).toBeGreaterThan(0);
    }
  });

  it('reads a whole (non-streamed) response', async () => {
    const { result, records } = await run(sim, false);
    expect(result.errors).toBe(0);
    expect(records[0].content.length).toBeGreaterThan(0);
    expect(records[0].usage).toMatchObject({ completionTokens: 12 });
  });
});
