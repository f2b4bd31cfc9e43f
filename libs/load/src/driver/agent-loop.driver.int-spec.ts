import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CampaignSpecSchema, type CampaignSpecInput, type RequestRecord } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { runShard } from '../engine/run-shard';

async function run(
  baseUrl: string,
  scenario: Partial<Extract<CampaignSpecInput['scenario'], { type: 'agent-loop' }>>,
) {
  const records: RequestRecord[] = [];
  const result = await runShard({
    spec: CampaignSpecSchema.parse({
      name: 'agent loop',
      target: { baseUrl },
      scenario: {
        type: 'agent-loop',
        model: 'fathom-sim-8b',
        tasks: ['What is the weather in Oslo?', 'Will it rain in Lyon?'],
        tools: [
          {
            name: 'weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
            mock: { answer: { temp_c: 4 } },
          },
        ],
        ...scenario,
      },
      load: { concurrency: 2, durationMs: 600, requestTimeoutMs: 5000 },
    }),
    shard: { index: 0, count: 1 },
    runId: 'agent',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: (r) => records.push(r), window: () => undefined },
    signal: new AbortController().signal,
  });
  return { result, records };
}

describe('agent loop against an OpenAI-compatible server', () => {
  let sim: SimTarget;
  beforeAll(async () => {
    sim = await startSimTarget({
      port: 0,
      host: '127.0.0.1',
      config: { seed: 3, timeScale: 0.2, output: { hallucinationRate: 0 } },
    });
  });
  afterAll(() => sim.close());

  it('runs the tool the model calls (a mock answer), feeds the result back and finishes on the text answer, timing each turn', async () => {
    const { result, records } = await run(`${sim.url}/v1`, {
      tools: [
        {
          name: 'weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
          mock: { answer: { temp_c: 4 }, latencyMs: 30 },
        },
      ],
    });
    expect(result.errors).toBe(0);
    expect(records.length).toBeGreaterThan(1);
    for (const r of records) {
      // The sim calls the first tool on the user's turn and answers in text after the tool result.
      expect(r.agentLoop).toMatchObject({ turns: 2, finished: true, loops: 0 });
      expect(r.agentLoop!.turnTtftMs.every((t) => t !== null && t > 0)).toBe(true);
      expect(r.agentLoop!.toolCalls).toEqual([{ tool: 'weather', latencyMs: expect.any(Number), ok: true }]);
      expect(r.agentLoop!.toolCalls[0].latencyMs).toBeGreaterThanOrEqual(29);
      // The record's TTFT is the first turn's, counted from the request's start (which the
      // turn's own start may trail on a busy event loop), and comes before the loop ends.
      expect(r.ttftMs!).toBeGreaterThanOrEqual(r.agentLoop!.turnTtftMs[0]!);
      expect(r.ttftMs!).toBeLessThan(r.e2eMs - r.agentLoop!.toolCalls[0].latencyMs);
      expect(r.finishReason).toBe('stop');
      expect(r.content.length).toBeGreaterThan(0);
      expect(r.usage!.promptTokens).toBeGreaterThan(0);
    }
  }, 20000);

  it('calls an HTTP tool with the arguments the model wrote', async () => {
    const bodies: string[] = [];
    const tool = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        bodies.push(body);
        res.setHeader('content-type', 'application/json');
        res.end('{"temp_c": 11}');
      });
    });
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/weather`;
      const { records } = await run(`${sim.url}/v1`, {
        tools: [
          {
            name: 'weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
            http: { url },
          },
        ],
      });
      expect(records.every((r) => r.agentLoop!.finished && r.agentLoop!.toolCalls[0].ok)).toBe(true);
      expect(bodies.length).toBe(records.length);
      expect(() => JSON.parse(bodies[0])).not.toThrow();
    } finally {
      await new Promise((resolve) => tool.close(resolve));
    }
  }, 20000);

  it('counts repeated calls as loops and stops at maxTurns without a final answer', async () => {
    // A model that calls the same tool with the same arguments every turn.
    const model = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'text/event-stream');
        const chunk = (delta: unknown, finish: string | null) =>
          `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        res.end(
          chunk(
            {
              role: 'assistant',
              tool_calls: [
                {
                  index: 0,
                  id: 'c1',
                  type: 'function',
                  function: { name: 'weather', arguments: '{"city":"Oslo"}' },
                },
              ],
            },
            null,
          ) +
            chunk({}, 'tool_calls') +
            'data: [DONE]\n\n',
        );
      });
    });
    await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
    try {
      const { records } = await run(`http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`, {
        maxTurns: 4,
      });
      expect(records.length).toBeGreaterThan(0);
      expect(records[0].agentLoop).toMatchObject({ turns: 4, finished: false, loops: 3 });
      expect(records[0].errorMessage).toBeUndefined();
      expect(records[0].errorClass).toBeNull();
    } finally {
      await new Promise((resolve) => model.close(resolve));
    }
  }, 20000);

  it('classes a turn answered with a page that holds no server-sent event as malformed-sse', async () => {
    const model = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'text/html');
        res.end('<html>Please log in</html>');
      });
    });
    await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
    try {
      const { records } = await run(`http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`, {});
      expect(records.length).toBeGreaterThan(0);
      expect(records[0].errorClass).toBe('malformed-sse');
      expect(records[0].errorMessage).toContain('held no server-sent event');
    } finally {
      await new Promise((resolve) => model.close(resolve));
    }
  }, 20000);
});
