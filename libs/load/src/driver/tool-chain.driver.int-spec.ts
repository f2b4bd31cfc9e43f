import { CampaignSpecSchema } from '@fathom/contracts';
import { startSimTarget } from '@fathom/sim';
import { runShard } from '../engine/run-shard';
import type { DriverOutcome } from './request-outcome';

describe('tool-call chains against the simulated target', () => {
  it('asks the model, calls the tool it names, feeds the result back and ends with its answer', async () => {
    const sim = await startSimTarget({
      port: 0,
      config: { timeScale: 0.1, tools: { v21LatencyMs: 20, v19LatencyMs: 30 } },
    });
    try {
      const outcomes: DriverOutcome[] = [];
      const tool = (name: string, field: string) => ({
        name,
        parameters: { type: 'object', properties: { [field]: { type: 'string' } }, required: [field] },
        invokePath: `/tools/${name}/invoke`,
      });
      const sut = await runShard({
        spec: CampaignSpecSchema.parse({
          name: 'tools',
          target: { baseUrl: `${sim.url}/v1` },
          scenario: {
            type: 'tool-chain',
            model: sim.config.model,
            prompts: ['Weather in Oslo?'],
            tools: [tool('weather', 'city'), tool('orders', 'order_id')],
          },
          load: { concurrency: 2, durationMs: 600 },
        }),
        shard: { index: 0, count: 1 },
        runId: 'r',
        campaignId: 'c',
        generatorId: 'g',
        sink: { record: () => undefined, window: () => undefined },
        signal: new AbortController().signal,
        tap: (_id, outcome) => outcomes.push(outcome),
      });
      expect(sut.sent).toBeGreaterThan(1);
      expect(sut.errors).toBe(0);
      expect(sut.assertions['tool.weather']).toEqual({ passed: sut.sent, failed: 0 });
      expect(outcomes[0].content.length).toBeGreaterThan(0);
      expect(outcomes[0].usage!.promptTokens).toBeGreaterThan(0);
    } finally {
      await sim.close();
    }
  });

  it('fails the chain with the tool endpoint status when a tool refuses', async () => {
    const sim = await startSimTarget({ port: 0, config: { timeScale: 0.1 } });
    try {
      const sut = await runShard({
        spec: CampaignSpecSchema.parse({
          name: 'tools',
          target: { baseUrl: `${sim.url}/v1` },
          // The model fills `where`, the weather tool requires `city`: 400 from the tool.
          scenario: {
            type: 'tool-chain',
            model: sim.config.model,
            prompts: ['Weather?'],
            tools: [
              {
                name: 'weather',
                parameters: { type: 'object', properties: { where: { type: 'string' } } },
                invokePath: '/tools/weather/invoke',
              },
            ],
          },
          load: { concurrency: 1, durationMs: 300 },
        }),
        shard: { index: 0, count: 1 },
        runId: 'r',
        campaignId: 'c',
        generatorId: 'g',
        sink: { record: () => undefined, window: () => undefined },
        signal: new AbortController().signal,
      });
      expect(sut.sent).toBeGreaterThan(0);
      expect(sut.errors).toBe(sut.sent);
      expect(sut.assertions['tool.weather'].failed).toBe(sut.sent);
    } finally {
      await sim.close();
    }
  });
  it('records each tool answer as a shape with its version, and falls back to v1.9 when v2.1 times out', async () => {
    // v2.1 answers after 5000 x 0.1 = 500 ms, past the 100 ms main-path timeout; v1.9 after 3 ms.
    const sim = await startSimTarget({
      port: 0,
      config: { timeScale: 0.1, tools: { v21LatencyMs: 5000, v19LatencyMs: 30 } },
    });
    try {
      const outcomes: DriverOutcome[] = [];
      const sut = await runShard({
        spec: CampaignSpecSchema.parse({
          name: 'tools',
          target: { baseUrl: `${sim.url}/v1` },
          scenario: {
            type: 'tool-chain',
            model: sim.config.model,
            prompts: ['Weather in Oslo?'],
            tools: [
              {
                name: 'weather',
                parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
                invokePath: '/tools/weather/invoke',
                headers: { 'x-gray-flag': 'v2' },
                contract: { version: 'v2.1', responses: { '*': { type: 'object' } } },
                timeoutMs: 100,
                fallback: { headers: { 'x-tool-version': 'v1.9' } },
              },
            ],
          },
          load: { concurrency: 1, durationMs: 300 },
        }),
        shard: { index: 0, count: 1 },
        runId: 'r',
        campaignId: 'c',
        generatorId: 'g',
        sink: { record: () => undefined, window: () => undefined },
        signal: new AbortController().signal,
        tap: (_id, outcome) => outcomes.push(outcome),
      });
      expect(sut.errors).toBe(0);
      expect(outcomes[0].toolCalls).toEqual([
        { tool: 'weather', version: 'v2.1', status: 0, body: 'no-response', fallbackTriggered: true },
        {
          tool: 'weather',
          version: 'v1.9',
          status: 200,
          body: 'json',
          fallback: true,
          shape: {
            fields: {
              $: ['object'],
              '$.city': ['string'],
              '$.temp_c': expect.any(Array),
              '$.conditions': ['string'],
            },
            truncated: false,
          },
        },
      ]);
    } finally {
      await sim.close();
    }
  });
});
