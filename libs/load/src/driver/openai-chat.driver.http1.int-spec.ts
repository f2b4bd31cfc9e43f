import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { ChatScenarioSchema, EmbeddingsScenarioSchema, type ChatScenario } from '@fathom/contracts';
import { ChatStreamAssembler, SseDecoder, parseChatStream } from '@fathom/semantic';
import { waitFor } from '@fathom/testing';
import { PromptSource } from '../dataset/prompt.source';
import { EmbeddingsDriver } from './embeddings.driver';
import { MAX_RESPONSE_BYTES, OpenAiChatDriver } from './openai-chat.driver';
import { RequestCancel, RequestTimeout, type DriverOutcome, type DriverRequest } from './request-outcome';

// Recorded OpenAI streams (openai-python inline snapshots), from the shared fixture set and the
// semantic lib's copy.
const FIXTURES = [
  '/work/shared/fixtures/openai/openai-python__inline-snapshot__83b060bae42e.sse',
  '/work/shared/fixtures/openai/openai-python__inline-snapshot__c6aa7e397b71.sse',
  join(__dirname, '../../../semantic/src/__fixtures__/openai-python__inline-snapshot__83b060bae42e.sse'),
  join(__dirname, '../../../semantic/src/__fixtures__/openai-python__inline-snapshot__c6aa7e397b71.sse'),
].filter((path) => {
  try {
    readFileSync(path);
    return true;
  } catch {
    return false;
  }
});

const GAP_MS = 40;

/** The fixture's events (each with its blank line), and how many of them carry content. */
function eventsOf(text: string): { events: string[]; contentEvents: number } {
  const events = text.split(/(?<=\n\n)/).filter((e) => e.length > 0);
  const decoder = new SseDecoder();
  const assembler = new ChatStreamAssembler();
  let contentEvents = 0;
  for (const payload of [...decoder.push(text), ...decoder.end()])
    if (assembler.accept(payload).contentDelta !== '') contentEvents++;
  return { events, contentEvents };
}

function scenario(extra: Record<string, unknown> = {}): ChatScenario {
  return ChatScenarioSchema.parse({ type: 'chat', model: 'm', prompts: ['hi'], ...extra });
}

function requestOf(cancel = new RequestCancel()): DriverRequest {
  return {
    requestId: 'r-1',
    headers: {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      'x-fathom-run': 'run',
      'x-fathom-request': 'r-1',
    },
    cancel,
    startMono: performance.now(),
    item: { messages: [{ role: 'user', content: 'hi' }], text: 'hi', inputTokensClient: 1 },
    gate: () => true,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('OpenAiChatDriver over the own HTTP/1.1 client', () => {
  let server: Server;
  let baseUrl: string;
  let handler: (req: IncomingMessage, res: ServerResponse, body: string) => void;
  const sockets: Socket[] = [];
  const drivers: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => handler(req, res, body));
    });
    server.on('connection', (s: Socket) => sockets.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterEach(async () => {
    await Promise.all(drivers.splice(0).map((d) => d.close()));
    sockets.length = 0;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  const chat = (extra?: Record<string, unknown>, connections = 4) => {
    const driver = new OpenAiChatDriver(
      scenario(extra),
      { baseUrl },
      { connections, contentCapChars: 100_000 },
    );
    drivers.push(driver);
    return driver;
  };

  it.each(FIXTURES.map((f) => [f.replace(/^.*\/(.*\/.*)$/, '$1'), f]))(
    'streams %s: same content as the offline parser, one offset per content event, offsets are read times',
    async (_name, path) => {
      const text = readFileSync(path, 'utf8');
      const { events, contentEvents } = eventsOf(text);
      const half = Math.ceil(events.length / 2);
      handler = (req, res) => {
        expect(req.headers['x-fathom-request']).toBe('r-1');
        res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': 'srv-1' });
        res.write(events.slice(0, half).join(''));
        setTimeout(() => res.end(events.slice(half).join('')), GAP_MS);
      };
      const sut = await chat().execute(requestOf());
      const expected = parseChatStream(text);
      expect(sut.errorClass).toBeNull();
      expect(sut.content).toBe(expected.content);
      expect(sut.finishReason).toBe(expected.finishReason);
      expect(sut.usage?.completionTokens ?? null).toBe(expected.usage?.completionTokens ?? null);
      expect(sut.serverRequestId).toBe('srv-1');
      expect(sut.chunkOffsetsMs).toHaveLength(contentEvents);
      expect(sut.sendDelayMs).toBeGreaterThanOrEqual(0);
      // Offsets are non-decreasing read times; a read's events share its one stamp, so there are
      // fewer distinct offsets than events (each half is one write, nearly always one read).
      const offsets = sut.chunkOffsetsMs;
      for (let i = 1; i < offsets.length; i++) expect(offsets[i]).toBeGreaterThanOrEqual(offsets[i - 1]);
      if (offsets.length > 2) expect(new Set(offsets).size).toBeLessThan(offsets.length);
      expect(sut.e2eMs).toBeGreaterThanOrEqual(GAP_MS - 5);
    },
  );

  it('gives the same content for a stream written a few bytes at a time', async () => {
    const text = readFileSync(FIXTURES[0], 'utf8');
    const bytes = Buffer.from(text);
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let at = 0;
      const next = () => {
        if (at >= bytes.length) return void res.end();
        res.write(bytes.subarray(at, at + 7));
        at += 7;
        setImmediate(next);
      };
      next();
    };
    const sut = await chat().execute(requestOf());
    expect(sut.errorClass).toBeNull();
    expect(sut.content).toBe(parseChatStream(text).content);
    expect(sut.chunkOffsetsMs).toHaveLength(eventsOf(text).contentEvents);
  });

  it('stamps offsets at read time: events written 40 ms later get offsets about 40 ms later', async () => {
    const chunk = (i: number) =>
      `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"w${i}"},"finish_reason":null}]}\n\n`;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk(0) + chunk(1));
      setTimeout(() => {
        res.write(chunk(2));
        res.end(
          `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n`,
        );
      }, GAP_MS);
    };
    const sut = await chat().execute(requestOf());
    expect(sut.errorClass).toBeNull();
    expect(sut.content).toBe('w0w1w2');
    const [a, b, c] = sut.chunkOffsetsMs;
    expect(b).toBe(a);
    expect(c - b).toBeGreaterThanOrEqual(GAP_MS - 5);
    expect(sut.ttftMs).toBe(a);
  });

  it('reports a non-streamed completion with its usage', async () => {
    const json = JSON.stringify({
      id: 'c',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hello there' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    });
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(json);
    const sut = await chat({ stream: false }).execute(requestOf());
    expect(sut).toMatchObject({
      errorClass: null,
      content: 'hello there',
      finishReason: 'stop',
      ttftMs: null,
    });
    expect(sut.usage).toEqual({ promptTokens: 3, completionTokens: 2, cachedTokens: null });
  });

  it('keeps the error body of a 5xx as the error message', async () => {
    handler = (_req, res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('overloaded');
    const sut = await chat().execute(requestOf());
    expect(sut.errorClass).toBe('http-5xx');
    expect(sut.errorMessage).toBe('HTTP 503: overloaded');
  });

  it('reads Retry-After from the header of a 429, in seconds or as an HTTP-date', async () => {
    handler = (_req, res) =>
      res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '7' }).end('slow down');
    const sut = await chat().execute(requestOf());
    expect(sut).toMatchObject({ errorClass: 'http-4xx', status: 429, retryAfterS: 7 });
    const at = new Date(Date.now() + 30_000).toUTCString();
    handler = (_req, res) => res.writeHead(429, { 'retry-after': at }).end();
    const dated = await chat().execute(requestOf());
    expect(dated.retryAfterS).toBeGreaterThan(25);
    expect(dated.retryAfterS).toBeLessThanOrEqual(30);
    handler = (_req, res) => res.writeHead(429).end('Please try again in 3s.');
    expect((await chat().execute(requestOf())).retryAfterS).toBeUndefined();
  });

  it('counts the wait for the one connection as send delay, not as latency', async () => {
    handler = (_req, res) => setTimeout(() => res.writeHead(200).end('{"choices":[]}'), 50);
    const driver = chat({ stream: false }, 1);
    const [a, b] = await Promise.all([driver.execute(requestOf()), driver.execute(requestOf())]);
    // b was written only after a's whole response (>= 50 ms): that wait is its send delay.
    expect(b.sendDelayMs).toBeGreaterThanOrEqual(45);
    expect(a.sendDelayMs).toBeLessThan(b.sendDelayMs!);
    expect(b.e2eMs).toBeGreaterThanOrEqual(45);
    expect(sockets).toHaveLength(1);
  });

  it('times out through RequestCancel, drops the socket and serves the next request', async () => {
    let first = true;
    handler = (_req, res) => {
      if (first) {
        first = false;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'); // then nothing
        return;
      }
      res
        .writeHead(200, { 'content-type': 'text/event-stream' })
        .end(
          'data: {"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
        );
    };
    const driver = chat({}, 1);
    const cancel = new RequestCancel();
    const pending = driver.execute(requestOf(cancel));
    await sleep(40);
    cancel.abort(new RequestTimeout(40));
    const timedOut = await pending;
    expect(timedOut.errorClass).toBe('timeout');
    expect(timedOut.chunkOffsetsMs).toHaveLength(1);
    const next = await driver.execute(requestOf());
    expect(next.errorClass).toBeNull();
    expect(next.content).toBe('b');
    expect(sockets).toHaveLength(2);
  });

  it('classifies a server that closes mid-stream as a truncated stream', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n');
      setTimeout(() => res.socket?.destroy(), 10);
    };
    const sut = await chat().execute(requestOf());
    expect(sut.errorClass).toBe('stream-truncated');
    expect(sut.content).toBe('a');
  });

  it('classifies a malformed SSE payload as malformed-sse and drops the connection', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\ndata: {not json\n\n');
      // never ends: the driver must end the request itself
    };
    const driver = chat({}, 1);
    const sut = await driver.execute(requestOf());
    expect(sut.errorClass).toBe('malformed-sse');
    await sleep(20);
    expect(sockets[0].destroyed).toBe(true);
  });

  it('classifies a streamed 200 that holds no event at all (an HTML page) as malformed-sse; an empty one as truncated', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body>Please log in</body></html>');
    };
    const html = await chat().execute(requestOf());
    expect(html.errorClass).toBe('malformed-sse');
    expect(html.errorMessage).toBe(
      'HTTP 200 answer of 39 bytes held no server-sent event: not an event stream',
    );
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end();
    };
    const empty = await chat().execute(requestOf());
    expect(empty.errorClass).toBe('stream-truncated');
    expect(empty.errorMessage).toBe('stream ended without [DONE] or finish_reason (empty)');
  });

  it('classifies a non-streamed body that is not JSON as malformed-json, not malformed-sse', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"choices":[{"index":0,"message":{"content":"a"');
    };
    const sut = await chat({ stream: false }).execute(requestOf());
    expect(sut.errorClass).toBe('malformed-json');
    expect(sut.errorMessage).toContain('malformed-json');
  });

  it.each([
    [
      'non-streamed, one JSON string without end',
      false,
      '{"choices":[{"message":{"content":"',
      'x'.repeat(65536),
    ],
    [
      'streamed, one SSE line without end',
      true,
      'data: {"choices":[{"delta":{"content":"',
      'x'.repeat(65536),
    ],
    [
      'streamed, valid events without end',
      true,
      '',
      'data: {"choices":[{"delta":{"content":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}]}\n\n'.repeat(1000),
    ],
  ])('ends an answer past the body cap (%s) as protocol, in seconds', async (_name, stream, head, chunk) => {
    // Before: held whole until the request's timeout (2.7-3.3 GB for 4 requests in 10 s), and
    // the last case tokenised its content for minutes with the engine's event loop blocked.
    let closed = false;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
      res.write(head);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
      };
      res.on('drain', pump);
      res.once('close', () => (closed = true));
      pump();
    };
    const started = performance.now();
    const sut = await chat({ stream }).execute(requestOf());
    expect(sut.errorClass).toBe('protocol');
    expect(sut.errorMessage).toContain(`response body over ${MAX_RESPONSE_BYTES / 1024 / 1024} MiB: cut off`);
    expect(performance.now() - started).toBeLessThan(15_000);
    await waitFor(() => closed, { timeoutMs: 5000, description: 'the connection closed' });
  });

  it('classifies a response that is not HTTP as a protocol error', async () => {
    const garbage = createNetServer((socket) =>
      socket.once('data', () => socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n')),
    );
    await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
    try {
      const driver = new OpenAiChatDriver(
        scenario(),
        { baseUrl: `http://127.0.0.1:${(garbage.address() as AddressInfo).port}/v1` },
        { connections: 1, contentCapChars: 100 },
      );
      const sut = await driver.execute(requestOf());
      await driver.close();
      expect(sut.errorClass).toBe('protocol');
      expect(sut.errorMessage).toMatch(/Http1Error/);
    } finally {
      await new Promise((resolve) => garbage.close(resolve));
    }
  });

  it('embeddings: one vector per input, send delay and server request id from the own client', async () => {
    handler = (_req, res, body) => {
      const input = (JSON.parse(body) as { input: string[] }).input;
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'emb-1' }).end(
        JSON.stringify({
          data: input.map((_t, index) => ({ index, embedding: [0.1, 0.2] })),
          usage: { prompt_tokens: 4 },
        }),
      );
    };
    const source = new PromptSource([{ messages: [], text: 'a text', inputTokensClient: 2 }]);
    const driver = new EmbeddingsDriver(
      EmbeddingsScenarioSchema.parse({
        type: 'embeddings',
        model: 'e',
        batchSize: 2,
        dataset: { type: 'inline', prompts: ['a text'] },
      }),
      { baseUrl },
      { connections: 2, contentCapChars: 100 },
      source,
    );
    drivers.push(driver);
    const sut: DriverOutcome = await driver.execute(requestOf());
    expect(sut).toMatchObject({
      errorClass: null,
      content: '2 vectors',
      serverRequestId: 'emb-1',
      inputTokensClient: 3,
    });
    expect(sut.usage?.promptTokens).toBe(4);
    expect(sut.sendDelayMs).toBeGreaterThanOrEqual(0);
  });

  it('embeddings: a 429 keeps its Retry-After header', async () => {
    handler = (_req, res) => res.writeHead(429, { 'retry-after': '3' }).end('{"error":"slow down"}');
    const driver = new EmbeddingsDriver(
      EmbeddingsScenarioSchema.parse({
        type: 'embeddings',
        model: 'e',
        batchSize: 1,
        dataset: { type: 'inline', prompts: ['a text'] },
      }),
      { baseUrl },
      { connections: 1, contentCapChars: 100 },
      new PromptSource([{ messages: [], text: 'a text', inputTokensClient: 2 }]),
    );
    drivers.push(driver);
    expect(await driver.execute(requestOf())).toMatchObject({ status: 429, retryAfterS: 3 });
  });
});
