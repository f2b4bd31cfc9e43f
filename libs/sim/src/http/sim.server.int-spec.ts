import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startSimTarget, type SimTarget } from './sim.server';
import type { GroundTruthRecord } from './ground-truth.store';

const fixtures = join(__dirname, '..', '__fixtures__');

/** Parses an SSE body into its `data:` payloads (JSON or the literal [DONE]). */
function events(body: string): unknown[] {
  return body
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => block.slice(6))
    .map((data) => (data === '[DONE]' ? '[DONE]' : JSON.parse(data)));
}

/** Structural signature of a value: key paths and JSON types, ignoring values. */
function shape(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value))
    return [`${prefix}:array`, ...(value.length > 0 ? shape(value[0], `${prefix}[]`) : [])];
  if (value !== null && typeof value === 'object') {
    return [`${prefix}:object`, ...Object.entries(value).flatMap(([k, v]) => shape(v, `${prefix}.${k}`))];
  }
  return [`${prefix}:${value === null ? 'null' : typeof value}`];
}

describe('sim-target HTTP server', () => {
  let sut: SimTarget;
  let client: OpenAI;

  beforeAll(async () => {
    sut = await startSimTarget({ port: 0, config: { timeScale: 0.05, rag: { initialIndexSize: 500 } } });
    client = new OpenAI({ baseURL: `${sut.url}/v1`, apiKey: 'sim', maxRetries: 0 });
  });
  afterAll(() => sut.close());

  const post = (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${sut.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('streams a chat completion with logprobs to the official openai client', async () => {
    const stream = await client.chat.completions.create({
      model: 'fathom-sim-8b',
      messages: [{ role: 'user', content: 'Tell me about rivers.' }],
      stream: true,
      stream_options: { include_usage: true },
      logprobs: true,
      top_logprobs: 3,
    });
    let text = '';
    let logprobCount = 0;
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      text += choice.delta.content ?? '';
      for (const entry of choice.logprobs?.content ?? []) {
        expect(entry.top_logprobs).toHaveLength(3);
        expect(entry.top_logprobs.some((t) => t.token === entry.token && t.logprob === entry.logprob)).toBe(
          true,
        );
        logprobCount++;
      }
      finish = choice.finish_reason ?? finish;
    }
    expect(finish).toBe('stop');
    expect(logprobCount).toBe(64);
    expect(usage?.completion_tokens).toBe(64);
    expect(text.length).toBeGreaterThan(100);
  });

  it('streams tool calls as deltas that the openai client assembles', async () => {
    const stream = await client.chat.completions.create({
      model: 'fathom-sim-8b',
      messages: [{ role: 'user', content: 'Weather in Edinburgh?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            parameters: {
              type: 'object',
              properties: { city: { type: 'string' }, units: { type: 'string', enum: ['c', 'f'] } },
              required: ['city'],
            },
          },
        },
      ],
      stream: true,
    });
    let name = '';
    let args = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      const call = chunk.choices[0]?.delta.tool_calls?.[0];
      name += call?.function?.name ?? '';
      args += call?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe('get_weather');
    expect(Object.keys(JSON.parse(args))).toEqual(['city', 'units']);
    expect(finish).toBe('tool_calls');
  });

  it('serves non-streaming chat, completions, embeddings (base64 by default) and models to the client', async () => {
    const chat = await client.chat.completions.create({
      model: 'fathom-sim-8b',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 5,
      logprobs: true,
    });
    expect(chat.choices[0].finish_reason).toBe('length');
    expect(chat.choices[0].logprobs?.content).toHaveLength(5);
    expect(chat.usage?.completion_tokens).toBe(5);
    const completion = await client.completions.create({
      model: 'fathom-sim-8b',
      prompt: 'Once upon a time',
      max_tokens: 7,
    });
    expect(completion.usage?.completion_tokens).toBe(7);
    const streamed = await client.completions.create({
      model: 'fathom-sim-8b',
      prompt: 'Once upon a time',
      max_tokens: 7,
      stream: true,
    });
    let text = '';
    for await (const chunk of streamed) text += chunk.choices[0]?.text ?? '';
    expect(text).toBe(completion.choices[0].text);
    const embedding = await client.embeddings.create({ model: 'fathom-sim-8b', input: ['a cat', 'a dog'] });
    expect(embedding.data).toHaveLength(2);
    expect(embedding.data[0].embedding).toHaveLength(384);
    const norm = Math.hypot(...embedding.data[0].embedding);
    expect(norm).toBeCloseTo(1, 4);
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['fathom-sim-8b']);
  });

  it('matches the structure of recorded OpenAI streams (content with logprobs, and tool calls)', async () => {
    const recorded = events(
      readFileSync(join(fixtures, 'openai-python__inline-snapshot__83b060bae42e.sse'), 'utf8'),
    );
    const res = await post('/v1/chat/completions', {
      model: 'fathom-sim-8b',
      messages: [{ role: 'user', content: 'Say foo' }],
      stream: true,
      stream_options: { include_usage: true },
      logprobs: true,
      max_tokens: 2,
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = await res.text();
    expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
    const ours = events(body);
    expect(ours).toHaveLength(recorded.length);
    for (let i = 0; i < recorded.length; i++) {
      // Every key path and type of the recorded chunk is present in ours (ours may add fields, e.g. cached_tokens).
      const mine = new Set(shape(ours[i]));
      expect(shape(recorded[i]).filter((p) => !mine.has(p))).toEqual([]);
    }

    const recordedTools = events(
      readFileSync(join(fixtures, 'openai-python__inline-snapshot__c6aa7e397b71.sse'), 'utf8'),
    );
    const toolRes = await post('/v1/chat/completions', {
      model: 'fathom-sim-8b',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'GetWeatherArgs',
            parameters: {
              type: 'object',
              properties: {
                city: { type: 'string' },
                country: { type: 'string' },
                units: { type: 'string', enum: ['c', 'f'] },
              },
            },
          },
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    const toolEvents = events(await toolRes.text());
    const recordedShapes = [
      recordedTools[0],
      recordedTools[1],
      recordedTools[recordedTools.length - 3],
      recordedTools[recordedTools.length - 2],
    ];
    const ourShapes = [
      toolEvents[0],
      toolEvents[1],
      toolEvents[toolEvents.length - 3],
      toolEvents[toolEvents.length - 2],
    ];
    recordedShapes.forEach((r, i) => {
      const mine = new Set(shape(ourShapes[i]));
      expect(shape(r).filter((p) => !mine.has(p))).toEqual([]);
    });
    expect(toolEvents[toolEvents.length - 1]).toBe('[DONE]');
  });

  it('records ground truth joined to the x-fathom-request header', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: 'fathom-sim-8b', messages: [{ role: 'user', content: 'ground truth please' }], stream: true },
      { 'x-fathom-request': 'lg-42' },
    );
    await res.text();
    const id = res.headers.get('x-sim-request-id');
    expect(id).toMatch(/^sim-/);
    const record = (await (await fetch(`${sut.url}/sim/requests/${id}`)).json()) as GroundTruthRecord;
    expect(record.fathomRequestId).toBe('lg-42');
    expect(record.status).toBe('finished');
    expect(record.tokenEmitEpochMs).toHaveLength(64);
    for (let i = 1; i < 64; i++)
      expect(record.tokenEmitEpochMs[i]).toBeGreaterThanOrEqual(record.tokenEmitEpochMs[i - 1]);
    expect(record.tokenEmitEpochMs[0]).toBeGreaterThan(record.arrivalEpochMs);
    expect(record.timing.ttftMs).toBeCloseTo(record.timing.queueMs! + record.timing.prefillMs!, 6);
    expect(record.tokenEntropyBits).toHaveLength(64);
  });

  it('plants hallucinated spans with high-entropy logprobs (deterministic under the seed)', async () => {
    await post('/sim/faults', { kind: 'hallucination_rate', rate: 1 });
    const ask = async (): Promise<{ record: GroundTruthRecord; logprobs: number[]; text: string }> => {
      const res = await post('/v1/chat/completions', {
        model: 'fathom-sim-8b',
        messages: [{ role: 'user', content: 'Who founded the city?' }],
        logprobs: true,
      });
      const body = (await res.json()) as OpenAI.ChatCompletion;
      const record = (await (
        await fetch(`${sut.url}/sim/requests/${res.headers.get('x-sim-request-id')}`)
      ).json()) as GroundTruthRecord;
      return {
        record,
        logprobs: body.choices[0].logprobs!.content!.map((c) => c.logprob),
        text: body.choices[0].message.content ?? '',
      };
    };
    const first = await ask();
    const second = await ask();
    await fetch(`${sut.url}/sim/faults/hallucination_rate`, { method: 'DELETE' });
    expect(second.text).toBe(first.text);
    expect(first.record.hallucinatedSpans).toHaveLength(1);
    const span = first.record.hallucinatedSpans[0];
    const inSpan = first.record.tokenEntropyBits.slice(span.start, span.end);
    const outside = first.record.tokenEntropyBits.filter((_, i) => i < span.start || i >= span.end);
    const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(inSpan)).toBeGreaterThan(3.5);
    expect(mean(outside)).toBeLessThan(2.6);
    expect(mean(first.logprobs.slice(span.start, span.end))).toBeLessThan(
      mean(first.logprobs.filter((_, i) => i < span.start || i >= span.end)),
    );
  });

  it.each([
    ['malformed JSON', '{"model":', 400, 'invalid_request_error'],
    ['missing messages', { model: 'fathom-sim-8b' }, 400, 'invalid_request_error'],
    ['empty messages', { model: 'fathom-sim-8b', messages: [] }, 400, 'invalid_request_error'],
    [
      'bad role',
      { model: 'fathom-sim-8b', messages: [{ role: 'wizard', content: 'x' }] },
      400,
      'invalid_request_error',
    ],
    [
      'unknown model',
      { model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] },
      404,
      'invalid_request_error',
    ],
    [
      'too many top_logprobs',
      {
        model: 'fathom-sim-8b',
        messages: [{ role: 'user', content: 'x' }],
        logprobs: true,
        top_logprobs: 21,
      },
      400,
      'invalid_request_error',
    ],
    [
      'top_logprobs without logprobs',
      { model: 'fathom-sim-8b', messages: [{ role: 'user', content: 'x' }], top_logprobs: 2 },
      400,
      'invalid_request_error',
    ],
    [
      'context too long',
      { model: 'fathom-sim-8b', messages: [{ role: 'user', content: 'word '.repeat(9000) }] },
      400,
      'invalid_request_error',
    ],
  ])('answers a bad chat request (%s) with an OpenAI error body', async (_name, body, status, type) => {
    const res = await post('/v1/chat/completions', body);
    expect(res.status).toBe(status);
    const json = (await res.json()) as { error: Record<string, unknown> };
    expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(json.error.type).toBe(type);
    expect(typeof json.error.message).toBe('string');
  });

  it('surfaces a bad request through the openai client as a typed error, and keeps serving', async () => {
    await expect(
      client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const unknown = await fetch(`${sut.url}/v2/whatever`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('unknown_url');
    expect((await fetch(`${sut.url}/health`)).status).toBe(200);
  });

  it('exposes vLLM metric names from the catalog, moving with the traffic', async () => {
    const catalog = JSON.parse(readFileSync(join(fixtures, 'vllm-metrics-catalog.json'), 'utf8')) as {
      metrics: { name: string; type: string }[];
    };
    const text = await (await fetch(`${sut.url}/metrics`)).text();
    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
    for (const [name, type] of types) {
      const entry = catalog.metrics.find(
        (m) => m.name === name || `${m.name}_total` === name || m.name === name.replace(/_total$/, ''),
      );
      expect(entry).toBeDefined();
      expect(entry!.type.startsWith(type)).toBe(true);
    }
    expect(text).toMatch(/^vllm:kv_cache_usage_perc\{engine="0",model_name="fathom-sim-8b"\} /m);
    expect(Number(/^vllm:generation_tokens_total\{[^}]*\} (\S+)$/m.exec(text)![1])).toBeGreaterThan(64);
    expect(text).toMatch(
      /^vllm:time_to_first_token_seconds_bucket\{engine="0",model_name="fathom-sim-8b",le="\+Inf"\} [1-9]/m,
    );
    expect(text).not.toContain('gpu_cache_usage_perc');
  });

  it('switches to the legacy vLLM names when configured', async () => {
    const legacy = await startSimTarget({
      config: { metrics: { legacyNames: true }, rag: { initialIndexSize: 0 } },
    });
    try {
      const text = await (await fetch(`${legacy.url}/metrics`)).text();
      expect(text).toMatch(/^vllm:gpu_cache_usage_perc\{model_name="fathom-sim-8b"\} 0\.0$/m);
      expect(text).toContain('vllm:time_per_output_token_seconds_bucket');
      expect(text).not.toContain('kv_cache_usage_perc');
      expect(text).not.toContain('engine="0"');
    } finally {
      await legacy.close();
    }
  });

  it('exposes dcgm-exporter fields with the exporter labels and values that follow the load', async () => {
    const counters = readFileSync(join(fixtures, 'dcgm-exporter__etc__default-counters.csv'), 'utf8');
    const sample = readFileSync(join(fixtures, 'dcgm-exporter-sample-h100-8gpu-k8s.prom'), 'utf8');
    const fixtureLabels = /^DCGM_FI_DEV_GPU_TEMP\{gpu="0",([^}]*)\}/m
      .exec(sample)![1]
      .split(',')
      .slice(0, 5)
      .map((l) => l.split('=')[0]);
    await fetch(`${sut.url}/dcgm/metrics`);
    const streams = Array.from({ length: 16 }, (_, i) =>
      post('/v1/chat/completions', {
        model: 'fathom-sim-8b',
        messages: [{ role: 'user', content: `load ${i}` }],
        max_tokens: 64,
      }).then((r) => r.text()),
    );
    await Promise.all(streams);
    const text = await (await fetch(`${sut.url}/dcgm/metrics`)).text();
    for (const [, name] of text.matchAll(/^# TYPE (\S+) /gm)) {
      if (name !== 'DCGM_FI_PROF_SM_ACTIVE') expect(counters).toMatch(new RegExp(`^#? ?${name},`, 'm'));
    }
    const labels = /^DCGM_FI_DEV_GPU_UTIL\{gpu="0",([^}]*)\}/m
      .exec(text)![1]
      .split(',')
      .map((l) => l.split('=')[0]);
    for (const label of fixtureLabels) expect(labels).toContain(label);
    const util = (t: string): number => Number(/^DCGM_FI_DEV_GPU_UTIL\{[^}]*\} (\d+)$/m.exec(t)![1]);
    const power = (t: string): number => Number(/^DCGM_FI_DEV_POWER_USAGE\{[^}]*\} (\S+)$/m.exec(t)![1]);
    // At timeScale 0.05 timer granularity stretches wall time between steps, so "busy" is a
    // fraction of what real time would show; the idle scrape that follows must read lower.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const idle = await (await fetch(`${sut.url}/dcgm/metrics`)).text();
    expect(util(text)).toBeGreaterThan(5);
    expect(util(idle)).toBeLessThan(util(text));
    expect(power(text)).toBeGreaterThan(power(idle));
  });
});
