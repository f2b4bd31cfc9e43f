import OpenAI from 'openai';
import { startSimTarget, type SimTarget } from '../http/sim.server';
import type { GroundTruthRecord } from '../http/ground-truth.store';

describe('faults switched at run time', () => {
  let sut: SimTarget;
  let client: OpenAI;

  beforeAll(async () => {
    sut = await startSimTarget({ config: { timeScale: 0.05, rag: { initialIndexSize: 200 } } });
    client = new OpenAI({ baseURL: `${sut.url}/v1`, apiKey: 'sim', maxRetries: 0 });
  });
  afterEach(() => sut.faults.clearAll());
  afterAll(() => sut.close());

  const setFault = async (spec: Record<string, unknown>): Promise<void> => {
    const res = await fetch(`${sut.url}/sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spec),
    });
    expect(res.status).toBe(200);
  };
  const clearFault = async (kind: string): Promise<void> => {
    const res = await fetch(`${sut.url}/sim/faults/${kind}`, { method: 'DELETE' });
    expect(((await res.json()) as { cleared: boolean }).cleared).toBe(true);
  };
  const chat = async (
    body: Record<string, unknown> = {},
    prompt = 'fault test',
  ): Promise<{ res: Response; text: string; record: GroundTruthRecord }> => {
    const res = await fetch(`${sut.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'fathom-sim-8b',
        messages: [{ role: 'user', content: prompt }],
        ...body,
      }),
    });
    const text = await res.text();
    const record = (await (
      await fetch(`${sut.url}/sim/requests/${res.headers.get('x-sim-request-id')}`)
    ).json()) as GroundTruthRecord;
    return { res, text, record };
  };

  it('lists the active faults and refuses an unknown kind', async () => {
    await setFault({ kind: 'latency_spike', addMs: 10 });
    const listed = (await (await fetch(`${sut.url}/sim/faults`)).json()) as {
      faults: { spec: { kind: string } }[];
    };
    expect(listed.faults.map((f) => f.spec.kind)).toEqual(['latency_spike']);
    const bad = await fetch(`${sut.url}/sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"kind":"meteor"}',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it('clears a fault by itself after its duration', async () => {
    await setFault({ kind: 'http_5xx', durationMs: 150 });
    expect((await chat({ max_tokens: 2 })).res.status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await chat({ max_tokens: 2 })).res.status).toBe(200);
  });

  it('latency_spike lengthens every decode step', async () => {
    // The quicker of two answers: one stall of this shared machine (a GC, the other core busy)
    // inside a 50 ms baseline must not eat the 120 ms the spike adds.
    const decodeMs = async () =>
      Math.min(
        (await chat({ max_tokens: 9 })).record.timing.decodeMs!,
        (await chat({ max_tokens: 9 })).record.timing.decodeMs!,
      );
    const before = await decodeMs();
    await setFault({ kind: 'latency_spike', addMs: 300 });
    const during = await decodeMs();
    await clearFault('latency_spike');
    const after = await decodeMs();
    // 8 decode steps x 300 model ms x timeScale 0.05 = 120 ms more.
    expect(during - before).toBeGreaterThan(100);
    expect(after).toBeLessThan(during - 100);
  });

  it('kv_shrink saturates the cache at a load it normally carries', async () => {
    const burst = async (): Promise<GroundTruthRecord[]> =>
      Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          chat({ max_tokens: 64 }, `request ${i} `.repeat(100)).then((r) => r.record),
        ),
      );
    const preemptionsOf = (records: GroundTruthRecord[]): number =>
      records.reduce((sum, r) => sum + r.preemptions, 0);
    const normal = await burst();
    expect(preemptionsOf(normal)).toBe(0);
    await setFault({ kind: 'kv_shrink', fraction: 0.02 });
    const shrunk = await burst();
    expect(sut.engine.snapshot().kvCapacityBlocks).toBe(81);
    expect(preemptionsOf(shrunk) + shrunk.filter((r) => r.timing.queueMs! > 20).length).toBeGreaterThan(0);
    await clearFault('kv_shrink');
    await chat({ max_tokens: 2 });
    expect(sut.engine.snapshot().kvCapacityBlocks).toBe(4096);
  });

  it('stream_stall pauses a stream mid-response, then it resumes', async () => {
    await setFault({ kind: 'stream_stall', afterTokens: 4, stallMs: 300 });
    const stalled = await chat({ stream: true, max_tokens: 10 });
    await clearFault('stream_stall');
    const normal = await chat({ stream: true, max_tokens: 10 });
    const maxGap = (r: GroundTruthRecord): number =>
      Math.max(...r.tokenEmitEpochMs.slice(1).map((t, i) => t - r.tokenEmitEpochMs[i]));
    expect(stalled.record.tokenEmitEpochMs[4] - stalled.record.tokenEmitEpochMs[3]).toBeGreaterThanOrEqual(
      290,
    );
    expect(stalled.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(maxGap(normal.record)).toBeLessThan(150);
  });

  it('stream_truncate cuts a stream without finish chunk or [DONE]', async () => {
    await setFault({ kind: 'stream_truncate', afterTokens: 5 });
    const res = await fetch(`${sut.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'fathom-sim-8b',
        messages: [{ role: 'user', content: 'cut me' }],
        stream: true,
      }),
    });
    const received = await res.text().catch(() => 'terminated');
    const record = (await (
      await fetch(`${sut.url}/sim/requests/${res.headers.get('x-sim-request-id')}`)
    ).json()) as GroundTruthRecord;
    expect(record.status).toBe('truncated');
    expect(record.tokenEmitEpochMs).toHaveLength(5);
    expect(received).not.toContain('[DONE]');
    await clearFault('stream_truncate');
    expect((await chat({ stream: true })).text).toContain('data: [DONE]');
  });

  it('malformed_sse breaks the openai client, and it recovers when cleared', async () => {
    await setFault({ kind: 'malformed_sse', rate: 1 });
    // The client logs each unparsable event before throwing; keep the test output clean.
    const quiet = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const consume = async (): Promise<number> => {
      const stream = await client.chat.completions.create({
        model: 'fathom-sim-8b',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        max_tokens: 4,
      });
      let chunks = 0;
      for await (const _chunk of stream) chunks++;
      return chunks;
    };
    await expect(consume()).rejects.toThrow();
    expect(quiet).toHaveBeenCalled();
    quiet.mockRestore();
    await clearFault('malformed_sse');
    await expect(consume()).resolves.toBe(6);
  });

  it('http_5xx fails requests with an OpenAI server_error body', async () => {
    await setFault({ kind: 'http_5xx', status: 500, rate: 1 });
    const failed = await chat();
    expect(failed.res.status).toBe(500);
    expect(JSON.parse(failed.text).error.type).toBe('server_error');
    expect(failed.record.status).toBe('failed');
    await clearFault('http_5xx');
    expect((await chat({ max_tokens: 2 })).res.status).toBe(200);
  });

  it('rate_limit refuses completions with 429, a Retry-After header and an OpenAI rate-limit body', async () => {
    await setFault({ kind: 'rate_limit', rate: 1, retryAfterS: 3 });
    const refused = await chat();
    expect(refused.res.status).toBe(429);
    expect(refused.res.headers.get('retry-after')).toBe('3');
    expect(JSON.parse(refused.text).error).toMatchObject({
      code: 'rate_limit_exceeded',
      message: expect.stringContaining('try again in 3s'),
    });
    await clearFault('rate_limit');
    expect((await chat({ max_tokens: 2 })).res.status).toBe(200);
  });

  it('schema_drift changes a tool contract and its responses', async () => {
    const doc = async (): Promise<Record<string, unknown>> => {
      const body = (await (await fetch(`${sut.url}/tools/weather/v2.1/openapi.json`)).json()) as {
        paths: Record<
          string,
          {
            post: {
              responses: {
                '200': {
                  content: {
                    'application/json': {
                      schema: {
                        properties: Record<string, { properties?: Record<string, { type: string }> }>;
                      };
                    };
                  };
                };
              };
            };
          }
        >;
      };
      return body.paths['/tools/weather/invoke'].post.responses['200'].content['application/json'].schema
        .properties;
    };
    const invoke = async (): Promise<{ temperature: { value: unknown } }> =>
      (await (
        await fetch(`${sut.url}/tools/weather/invoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-gray-flag': 'v2' },
          body: '{"city":"Oslo"}',
        })
      ).json()) as { temperature: { value: unknown } };
    expect((await doc()).temperature).toMatchObject({ properties: { value: { type: 'number' } } });
    expect(typeof (await invoke()).temperature.value).toBe('number');
    await setFault({ kind: 'schema_drift', mode: 'type_change' });
    expect((await doc()).temperature).toMatchObject({ properties: { value: { type: 'string' } } });
    expect(typeof (await invoke()).temperature.value).toBe('string');
    await setFault({ kind: 'schema_drift', mode: 'required_dropped' });
    expect(await doc()).not.toHaveProperty('conditions');
    await clearFault('schema_drift');
    expect(await doc()).toHaveProperty('conditions');
  });

  it('tool_call_drift breaks chat tool-call arguments against the declared parameters', async () => {
    const tools = [
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
    const args = async (): Promise<Record<string, unknown>> => {
      const { text } = await chat({ tools, stream: false }, 'where is my order?');
      const body = JSON.parse(text) as {
        choices: Array<{ message: { tool_calls: Array<{ function: { arguments: string } }> } }>;
      };
      return JSON.parse(body.choices[0].message.tool_calls[0].function.arguments) as Record<string, unknown>;
    };
    const clean = await args();
    expect(typeof clean['order_id']).toBe('string');
    await setFault({ kind: 'tool_call_drift', mode: 'type_change' });
    expect(await args()).toEqual({ ...clean, order_id: 42 });
    await setFault({ kind: 'tool_call_drift', mode: 'required_dropped' });
    expect(await args()).not.toHaveProperty('order_id');
    await setFault({ kind: 'tool_call_drift', mode: 'extra_argument' });
    expect(await args()).toEqual({ ...clean, unexpected_argument: 'drifted' });
    // Limited to another tool: this one's arguments are clean again.
    await setFault({ kind: 'tool_call_drift', mode: 'type_change', tool: 'other_tool' });
    expect(await args()).toEqual(clean);
    await clearFault('tool_call_drift');
    expect(await args()).toEqual(clean);
  });

  it('hallucination_rate controls how many responses carry planted spans', async () => {
    const spans = async (): Promise<number> => {
      let count = 0;
      for (let i = 0; i < 6; i++) count += (await chat({}, `question ${i}`)).record.hallucinatedSpans.length;
      return count;
    };
    await setFault({ kind: 'hallucination_rate', rate: 1 });
    expect(await spans()).toBe(6);
    await setFault({ kind: 'hallucination_rate', rate: 0 });
    expect(await spans()).toBe(0);
  });

  it('refusal_rate makes chat completions decline in the OpenAI shape, streamed and not', async () => {
    await setFault({ kind: 'refusal_rate', rate: 1 });
    const answer = await client.chat.completions.create({
      model: 'fathom-sim-8b',
      messages: [{ role: 'user', content: 'how do I pick a lock?' }],
      max_tokens: 32,
      logprobs: true,
    });
    const choice = answer.choices[0];
    expect(choice.message.content).toBeNull();
    expect(choice.message.refusal).toBe("I'm sorry, but I can't help with that request.");
    expect(choice.finish_reason).toBe('stop');
    expect(choice.logprobs?.content).toBeNull();
    expect(choice.logprobs?.refusal?.map((t) => t.token).join('')).toBe(choice.message.refusal);
    expect(answer.usage?.completion_tokens).toBe(choice.logprobs?.refusal?.length);

    const stream = await client.chat.completions.create({
      model: 'fathom-sim-8b',
      messages: [{ role: 'user', content: 'how do I pick a lock?' }],
      max_tokens: 32,
      stream: true,
    });
    let content = '';
    let refusal = '';
    const finish: Array<string | null> = [];
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      content += c?.delta?.content ?? '';
      refusal += c?.delta?.refusal ?? '';
      if (c?.finish_reason) finish.push(c.finish_reason);
    }
    expect({ content, refusal, finish }).toEqual({
      content: '',
      refusal: "I'm sorry, but I can't help with that request.",
      finish: ['stop'],
    });

    // A refusing model calls no tool, even when one is required.
    const tools = [{ type: 'function', function: { name: 'pick_lock', parameters: { type: 'object' } } }];
    const { text, record } = await chat({ tools, tool_choice: 'required', stream: false });
    const message = (JSON.parse(text) as { choices: Array<{ message: Record<string, unknown> }> }).choices[0]
      .message;
    expect(message).toMatchObject({ content: null, refusal: expect.stringContaining('sorry') });
    expect(message).not.toHaveProperty('tool_calls');
    expect(record).toMatchObject({ refused: true, finishReason: 'stop', hallucinatedSpans: [] });

    // Legacy completions have no refusal field: they answer as before.
    const completion = await client.completions.create({
      model: 'fathom-sim-8b',
      prompt: 'hi',
      max_tokens: 4,
    });
    expect(completion.choices[0].text.length).toBeGreaterThan(0);

    await setFault({ kind: 'refusal_rate', rate: 0 });
    expect((await chat({ max_tokens: 4 })).record.refused).toBe(false);
    await clearFault('refusal_rate');
    const clean = await chat({ max_tokens: 4, stream: false });
    expect(clean.record.refused).toBe(false);
    expect(
      (JSON.parse(clean.text) as { choices: Array<{ message: unknown }> }).choices[0].message,
    ).toMatchObject({
      content: expect.any(String),
      refusal: null,
    });
  });

  it('reranker_saturation makes the reranker fail fast as busy', async () => {
    const rerank = (): Promise<Response> =>
      fetch(`${sut.url}/rag/rerank`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'cats', documents: ['a cat', 'a car'] }),
      });
    await setFault({ kind: 'reranker_saturation', inUse: 32 });
    const busy = await rerank();
    expect(busy.status).toBe(503);
    expect(((await busy.json()) as { error: { message: string } }).error.message).toBe(
      'reranker busy: 32/32 in use',
    );
    await clearFault('reranker_saturation');
    expect((await rerank()).status).toBe(200);
  });

  it('slow_loris trickles the response body', async () => {
    const timed = async (): Promise<number> => {
      const start = Date.now();
      await chat({ max_tokens: 3 });
      return Date.now() - start;
    };
    await setFault({ kind: 'slow_loris', bytesPerSecond: 1000 });
    const slow = await timed();
    await clearFault('slow_loris');
    const fast = await timed();
    expect(slow).toBeGreaterThan(400); // a ~700-byte body at 1000 B/s
    expect(fast).toBeLessThan(slow / 3);
  });

  it('agent_oscillation and agent_deadlock switch the agents from converging', async () => {
    const run = async (): Promise<{ status: string; meanIntentDeltaLate: number; cycle: string[] }> =>
      (await (
        await fetch(`${sut.url}/agents/run`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"agents":3,"steps":10}',
        })
      ).json()) as {
        status: string;
        meanIntentDeltaLate: number;
        cycle: string[];
      };
    const normal = await run();
    expect(normal.status).toBe('completed');
    await setFault({ kind: 'agent_oscillation' });
    const oscillating = await run();
    expect(oscillating.status).toBe('oscillating');
    expect(oscillating.meanIntentDeltaLate).toBeGreaterThan(0.5);
    await clearFault('agent_oscillation');
    await setFault({ kind: 'agent_deadlock' });
    const deadlocked = await run();
    expect(deadlocked.status).toBe('deadlock');
    expect(deadlocked.cycle).toEqual(['agent-0', 'agent-1', 'agent-2']);
    await clearFault('agent_deadlock');
    expect((await run()).status).toBe('completed');
  });

  it('applies faults given in the config at start', async () => {
    const planted = await startSimTarget({
      config: { faults: [{ kind: 'http_5xx', status: 502 }], rag: { initialIndexSize: 0 } },
    });
    try {
      const res = await fetch(`${planted.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"model":"fathom-sim-8b","prompt":"x"}',
      });
      expect(res.status).toBe(502);
      planted.faults.clear('http_5xx');
      const ok = await fetch(`${planted.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"model":"fathom-sim-8b","prompt":"x"}',
      });
      expect(ok.status).toBe(200);
    } finally {
      await planted.close();
    }
  });
});
