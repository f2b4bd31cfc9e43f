import { createHash } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import OpenAI from 'openai';
import WebSocket, { WebSocketServer } from 'ws';
import { RedactionRulesSchema } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { waitFor } from '@fathom/testing';
import { compileRedactor, redactDeep } from '../redaction.util';
import { startShadowGateway, type ShadowGateway } from './shadow-gateway';
import { startShadowGatewayAdmin } from './shadow-gateway-admin';

/** A loopback server on a free port; `handler` answers each request. */
async function serve(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<{
  url: string;
  server: Server;
  close(): Promise<void>;
}> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => handler(req, res, body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A deterministic primary: a fixed JSON answer, and an SSE answer in 4 chunks 60 ms apart. */
const SSE_CHUNKS = [
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo "}}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"there"},"finish_reason":"stop"}]}\n\n',
  'data: [DONE]\n\n',
];
const JSON_ANSWER =
  '{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}';

const chatBody = (stream: boolean) =>
  JSON.stringify({
    model: 'm',
    stream,
    messages: [{ role: 'user', content: 'write to jane.doe@example.com about order 123456' }],
  });

async function readTimed(response: Response): Promise<{ bytes: Buffer; firstChunkAt: number }> {
  const chunks: Buffer[] = [];
  let firstChunkAt = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    if (chunks.length === 0) firstChunkAt = performance.now();
    chunks.push(Buffer.from(chunk));
  }
  return { bytes: Buffer.concat(chunks), firstChunkAt };
}

describe('shadow gateway', () => {
  let primary: Awaited<ReturnType<typeof serve>>;
  let receiver: Awaited<ReturnType<typeof serve>>;
  const copies: Array<{ body: unknown; raw: string; headers: IncomingMessage['headers'] }> = [];
  /** POSTs the receiver got: to the mirror route (one copy each) and to the batch route. */
  const posts = { single: 0, batches: 0 };
  let lastChunkSentAt = 0;
  /** Requests to the primary's `/v1/hold` (an answer begun and never ended) that were closed. */
  let holdsClosed = 0;

  beforeAll(async () => {
    primary = await serve((req, res, body) => {
      const request = body ? (JSON.parse(body) as { stream?: boolean }) : {};
      if (req.url === '/v1/cookies') {
        // Raw headers: a repeated one in two spellings, and a hop-by-hop one.
        res.writeHead(200, [
          'Set-Cookie',
          'a=1',
          'set-cookie',
          'b=2',
          'X-Trace',
          't1',
          'Keep-Alive',
          'timeout=9',
        ]);
        return res.end('ok');
      }
      if (req.url === '/v1/hold') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
        req.once('close', () => holdsClosed++);
        return;
      }
      if (req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json', 'x-request-id': 'r-404' });
        return res.end('{"error":"no such route"}');
      }
      if (!request.stream) {
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'r-json' });
        return res.end(JSON_ANSWER);
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': 'r-sse' });
      SSE_CHUNKS.forEach((chunk, i) =>
        setTimeout(() => {
          res.write(chunk);
          if (i === SSE_CHUNKS.length - 1) {
            lastChunkSentAt = performance.now();
            res.end();
          }
        }, i * 60),
      );
    });
    receiver = await serve((req, res, body) => {
      if (req.url === '/mirror/batch') {
        // As the orchestrator's batch route: each copy as the mirror route would have had it.
        posts.batches++;
        const batch = JSON.parse(body) as { copies: Array<{ body: unknown; intent?: string }> };
        for (const copy of batch.copies)
          copies.push({
            body: copy.body,
            raw: JSON.stringify(copy.body),
            headers: { ...req.headers, 'x-fathom-intent': copy.intent },
          });
        res.writeHead(202).end(JSON.stringify({ accepted: batch.copies.length, invalid: 0 }));
        return;
      }
      posts.single++;
      copies.push({ body: JSON.parse(body), raw: body, headers: req.headers });
      res.writeHead(202).end('{"accepted":true}');
    });
  });

  afterAll(async () => {
    await primary?.close();
    await receiver?.close();
  });

  async function gateway(
    mirrorUrl: string | null,
    extra: Partial<Parameters<typeof startShadowGateway>[0]> = {},
  ) {
    return startShadowGateway({
      host: '127.0.0.1',
      port: 0,
      primary: primary.url,
      mirror: mirrorUrl ? { url: mirrorUrl, token: 'secret-token' } : null,
      ...extra,
    });
  }

  it('answers byte for byte what the primary answers, streamed chunk by chunk as it arrives', async () => {
    const sut = await gateway(`${receiver.url}/mirror`);
    try {
      for (const stream of [false, true]) {
        const ask = (base: string) =>
          fetch(`${base}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: 'Bearer client-key' },
            body: chatBody(stream),
          });
        const direct = await ask(primary.url);
        const directBody = await readTimed(direct);
        const proxied = await ask(sut.url);
        const proxiedBody = await readTimed(proxied);
        expect(proxied.status).toBe(direct.status);
        expect(proxied.headers.get('content-type')).toBe(direct.headers.get('content-type'));
        expect(proxied.headers.get('x-request-id')).toBe(direct.headers.get('x-request-id'));
        expect(proxiedBody.bytes.equals(directBody.bytes)).toBe(true);
        // The first chunk reached the caller before the primary sent its last one (180 ms later).
        if (stream) expect(proxiedBody.firstChunkAt).toBeLessThan(lastChunkSentAt);
      }
      // Errors of the primary pass through unchanged too.
      const notFound = await fetch(`${sut.url}/v1/nope`);
      expect(notFound.status).toBe(404);
      expect(await notFound.text()).toBe('{"error":"no such route"}');
    } finally {
      await sut.close();
    }
  });

  it('passes repeated headers through in their order and drops hop-by-hop ones', async () => {
    const sut = await gateway(null);
    try {
      const answer = await fetch(`${sut.url}/v1/cookies`);
      expect(await answer.text()).toBe('ok');
      expect(answer.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
      expect(answer.headers.get('x-trace')).toBe('t1');
      expect(answer.headers.get('keep-alive')).not.toBe('timeout=9');
    } finally {
      await sut.close();
    }
  });

  it("forwards a caller's Expect: 100-continue request and answers the primary's answer", async () => {
    // curl sends the expectation with bodies over 1 MB, other clients with every body; undici
    // refuses the header, so each such request was answered 502.
    copies.length = 0;
    const sut = await gateway(`${receiver.url}/mirror`);
    try {
      const body = chatBody(false);
      const answer = await new Promise<{ status: number; continued: boolean; text: string }>(
        (resolve, reject) => {
          let continued = false;
          const req = request(`${sut.url}/v1/chat/completions`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              expect: '100-continue',
            },
          });
          req.once('continue', () => {
            continued = true;
            req.end(body);
          });
          req.once('response', (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.once('end', () => resolve({ status: res.statusCode ?? 0, continued, text }));
          });
          req.once('error', reject);
        },
      );
      expect(answer).toEqual({ status: 200, continued: true, text: JSON_ANSWER });
      await waitFor(() => sut.stats().copied === 1, { timeoutMs: 5000, description: 'its copy' });
      expect(sut.stats()).toMatchObject({ forwarded: 1, primaryUnreachable: 0, copiesTooLarge: 0 });
    } finally {
      await sut.close();
    }
  });

  it('streams a body over the buffered cap to the primary as it arrives, whole, and copies none of it', async () => {
    // A primary that counts bytes as they come and answers their digest: no gateway holds a
    // multi-gigabyte upload in memory before forwarding it.
    let received = 0;
    const counting = createServer((req, res) => {
      const hash = createHash('sha256');
      req.on('data', (chunk: Buffer) => {
        received += chunk.length;
        hash.update(chunk);
      });
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(hash.digest('hex')));
    });
    await new Promise<void>((r) => counting.listen(0, '127.0.0.1', r));
    const sut = await gateway(`${receiver.url}/mirror`, {
      primary: `http://127.0.0.1:${(counting.address() as AddressInfo).port}`,
      maxBufferedBodyBytes: 64 * 1024,
    });
    try {
      const first = Buffer.alloc(256 * 1024, 'a');
      const rest = Buffer.alloc(256 * 1024, 'b');
      const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(`${sut.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': first.length + rest.length },
        });
        req.once('response', (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.once('end', () => resolve({ status: res.statusCode ?? 0, text }));
        });
        req.once('error', reject);
        req.write(first);
        // The rest only once the primary has had more than the cap: forwarding began before
        // the caller's body ended.
        void waitFor(() => received > 64 * 1024, {
          timeoutMs: 5000,
          description: 'the primary reading',
        }).then(() => req.end(rest), reject);
      });
      const expected = createHash('sha256').update(first).update(rest).digest('hex');
      expect(await answer).toEqual({ status: 200, text: expected });
      expect(sut.stats()).toMatchObject({ forwarded: 1, copied: 0, copiesDropped: 0, copiesTooLarge: 1 });
      // A body within the cap still goes whole, and is copied.
      const small = await fetch(`${sut.url}/v1/chat/completions`, { method: 'POST', body: chatBody(false) });
      expect(small.status).toBe(200);
      expect(await small.text()).toBe(createHash('sha256').update(chatBody(false)).digest('hex'));
      await waitFor(() => sut.stats().copied === 1, { timeoutMs: 5000, description: 'the small one copied' });
    } finally {
      await sut.close();
      counting.closeAllConnections();
      await new Promise<void>((r) => counting.close(() => r()));
    }
  });

  it('answers 400 to a request it cannot forward, and a flood of them never stalls the others', async () => {
    // `OPTIONS *` reached undici, which refused it and left the connection it picked marked
    // busy: after 256 of them every later request, production's included, waited for ever.
    const raw = (url: string, text: string) =>
      new Promise<string>((resolve, reject) => {
        const { port } = new URL(url);
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
        let answer = '';
        socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
        socket.once('close', () => resolve(answer));
        socket.once('error', reject);
        socket.setTimeout(3000, () => socket.destroy(new Error(`no answer to ${text.split('\r\n')[0]}`)));
      });
    const sut = await gateway(null);
    try {
      const star = await raw(sut.url, 'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(star).toMatch(/^HTTP\/1\.1 400 /);
      expect(star).toContain('the gateway cannot forward this request: request target \\"*\\" is not a path');
      for (let i = 0; i < 300; i++)
        await raw(sut.url, 'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      // An absolute-form target (RFC 9112 3.2.2) goes to the primary as its path.
      const absolute = await raw(
        sut.url,
        'GET http://elsewhere.example/v1/cookies HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(absolute).toMatch(/^HTTP\/1\.1 200 [^]*X-Trace: t1\r\n/);
      const answer = await fetch(`${sut.url}/v1/chat/completions`, { method: 'POST', body: chatBody(false) });
      expect(await answer.text()).toBe(JSON_ANSWER);
      expect(sut.stats()).toMatchObject({ forwarded: 2, refused: 301, primaryUnreachable: 0 });
    } finally {
      await sut.close();
    }
  });

  it('ends the request to the primary when the caller leaves mid-answer', async () => {
    const sut = await gateway(null);
    try {
      const before = holdsClosed;
      const leave = new AbortController();
      const answer = await fetch(`${sut.url}/v1/hold`, { signal: leave.signal });
      const reader = answer.body!.getReader();
      expect(Buffer.from((await reader.read()).value!).toString()).toBe('data: first\n\n');
      leave.abort();
      await waitFor(() => holdsClosed === before + 1, {
        timeoutMs: 3000,
        description: 'the primary saw it close',
      });
      expect(sut.stats()).toMatchObject({ forwarded: 1, primaryUnreachable: 0 });
    } finally {
      await sut.close();
    }
  });

  it('never sends a request whose caller left while it waited for a connection to the primary', async () => {
    // With every connection busy (a slow primary), a request waits in the pool; a caller that
    // timed out and retried had the primary asked twice, a retry storm made by the gateway.
    const seen: string[] = [];
    let release: (() => void) | null = null;
    const slow = createServer((req, res) => {
      seen.push(req.url ?? '');
      req.resume();
      if (req.url === '/first') release = () => res.end('first');
      else res.end('ok');
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const sut = await gateway(null, {
      primary: `http://127.0.0.1:${(slow.address() as AddressInfo).port}`,
      maxPrimaryConnections: 1,
    });
    try {
      const first = fetch(`${sut.url}/first`).then((r) => r.text());
      await waitFor(() => release !== null, { timeoutMs: 3000, description: 'the primary holding /first' });
      const leave = new AbortController();
      const second = fetch(`${sut.url}/second`, { signal: leave.signal }).catch((e: Error) => e.name);
      await new Promise((r) => setTimeout(r, 100)); // /second waits for the one connection
      leave.abort();
      expect(await second).toBe('AbortError');
      release!();
      expect(await first).toBe('first');
      expect(await fetch(`${sut.url}/third`).then((r) => r.text())).toBe('ok');
      expect(seen).toEqual(['/first', '/third']);
    } finally {
      await sut.close();
      slow.closeAllConnections();
      await new Promise<void>((r) => slow.close(() => r()));
    }
  });

  it('tunnels a WebSocket upgrade (the Realtime API) to the primary, both ways, and ends it on close', async () => {
    // The upgrade headers were stripped as hop-by-hop and the primary answered 426.
    const upgrades: Array<{ url?: string; authorization?: string }> = [];
    const realtime = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    realtime.on('connection', (socket, req) => {
      upgrades.push({ url: req.url, authorization: req.headers.authorization });
      socket.on('message', (m) => socket.send(`echo ${String(m)}`));
    });
    await new Promise<void>((r) => realtime.once('listening', () => r()));
    const sut = await gateway(null, {
      primary: `http://127.0.0.1:${(realtime.address() as AddressInfo).port}`,
    });
    try {
      const client = new WebSocket(`${sut.url.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, {
        headers: { authorization: 'Bearer client-key' },
      });
      await new Promise<void>((resolve, reject) =>
        client.once('open', () => resolve()).once('error', reject),
      );
      const echoes: string[] = [];
      client.on('message', (m) => echoes.push(String(m)));
      client.send('one');
      client.send(Buffer.alloc(70_000, 1)); // a frame bigger than one socket read
      await waitFor(() => echoes.length === 2, { timeoutMs: 3000, description: 'both echoes' });
      expect(echoes[0]).toBe('echo one');
      expect(echoes[1]).toHaveLength(5 + 70_000);
      expect(upgrades).toEqual([
        { url: '/v1/realtime?model=gpt-realtime', authorization: 'Bearer client-key' },
      ]);
      expect(sut.stats()).toMatchObject({ forwarded: 1, primaryUnreachable: 0 });
      // Closing the gateway ends the tunnel it holds.
      const closed = new Promise<number>((r) => client.once('close', (code) => r(code)));
      await sut.close();
      expect(await closed).toBe(1006);
    } finally {
      await sut.close();
      for (const c of realtime.clients) c.terminate();
      await new Promise<void>((r) => realtime.close(() => r()));
    }
  });

  it('answers 502 to an upgrade when the primary cannot be reached', async () => {
    const sut = await gateway(null, { primary: 'http://127.0.0.1:9' });
    try {
      const client = new WebSocket(`${sut.url.replace('http', 'ws')}/v1/realtime`);
      const error = await new Promise<Error>((r) => client.once('error', r));
      expect(error.message).toBe('Unexpected server response: 502');
      expect(sut.stats()).toMatchObject({ forwarded: 0, primaryUnreachable: 1 });
    } finally {
      await sut.close();
    }
  });

  it('copies each request of a concurrent burst once, none dropped below the cap, in batches', async () => {
    copies.length = 0;
    posts.single = posts.batches = 0;
    const sut = await gateway(`${receiver.url}/mirror`);
    try {
      const burst = 48; // below the default cap of 64; more than one turn's slice of the copy thread
      const asked = Array.from({ length: burst }, (_, i) =>
        fetch(`${sut.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-fathom-intent': `intent ${i}` },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `question ${i}` }] }),
        }).then((answer) => answer.text()),
      );
      for (const text of await Promise.all(asked)) expect(text).toBe(JSON_ANSWER);
      await waitFor(() => sut.stats().copied === burst, { timeoutMs: 5000, description: 'every copy' });
      const questions = copies.map(
        (c) => (c.body as { messages: Array<{ content: string }> }).messages[0].content,
      );
      expect(new Set(questions)).toEqual(new Set(Array.from({ length: burst }, (_, i) => `question ${i}`)));
      // Each copy keeps its own intent, batched or not.
      for (const copy of copies)
        expect(copy.headers['x-fathom-intent']).toBe(
          `intent ${(copy.body as { messages: Array<{ content: string }> }).messages[0].content.split(' ')[1]}`,
        );
      // Copies offered together went together: fewer POSTs than copies.
      expect(posts.batches).toBeGreaterThan(0);
      expect(posts.single + posts.batches).toBeLessThan(burst);
      expect(sut.stats()).toMatchObject({
        forwarded: burst,
        copied: burst,
        copiesDropped: 0,
        copiesFailed: 0,
      });
    } finally {
      await sut.close();
    }
  });

  it("sends a redacted copy of each chat request to the receiver, never the caller's key", async () => {
    copies.length = 0;
    const sut = await gateway(`${receiver.url}/mirror`);
    try {
      await (
        await fetch(`${sut.url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer client-key',
            'x-fathom-intent': 'support',
          },
          body: chatBody(false),
        })
      ).text();
      // The counts come from the copy thread, a turn of its loop after the receiver answered.
      const deadline = Date.now() + 5000;
      while ((copies.length < 1 || sut.stats().copied < 1) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(copies).toHaveLength(1);
      const text = JSON.stringify(copies[0].body);
      expect(text).not.toContain('jane.doe@example.com');
      expect(text).not.toContain('123456');
      expect(copies[0].headers.authorization).toBe('Bearer secret-token');
      expect(copies[0].headers['x-fathom-intent']).toBe('support');
      expect(sut.stats()).toMatchObject({ forwarded: 1, copied: 1, copiesFailed: 0 });
    } finally {
      await sut.close();
    }
  });

  it('sends each copy redacted byte for byte as redactDeep does with the default rules', async () => {
    copies.length = 0;
    const sut = await gateway(`${receiver.url}/mirror`);
    const request = {
      model: 'm',
      max_tokens: 256,
      messages: [
        { role: 'system', content: 'api_key=sk-live_abcdefgh12345678 and password: hunter2' },
        {
          role: 'user',
          content: 'call +44 20 7946 0958 or mail jane.doe@example.com, key AKIAIOSFODNN7EXAMPLE',
        },
      ],
      metadata: { api_key: 'plain-secret', order: 1234567 },
    };
    try {
      const answer = await fetch(`${sut.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request),
      });
      expect(await answer.text()).toBe(JSON_ANSWER);
      await waitFor(() => copies.length === 1, { timeoutMs: 5000, description: 'the copy' });
      const expected = JSON.stringify(redactDeep(request, compileRedactor(RedactionRulesSchema.parse({}))));
      expect(copies[0].raw).toBe(expected);
      for (const secret of ['jane.doe', 'AKIAIOSFODNN7EXAMPLE', 'hunter2', 'plain-secret', '7946', '1234567'])
        expect(copies[0].raw).not.toContain(secret);
      expect(copies[0].body).toMatchObject({ max_tokens: 256 });
    } finally {
      await sut.close();
    }
  });

  /** A receiver that holds every copy unanswered while `holding`, then answers 202. */
  async function holdingReceiver() {
    const state = { holding: true, arrivals: [] as string[] };
    const server = await serve((_req, res, body) => {
      state.arrivals.push(body);
      if (!state.holding) res.writeHead(202).end('{"accepted":true}');
    });
    return Object.assign(state, { url: server.url, close: server.close });
  }

  const askChat = async (base: string, stream: boolean) =>
    (
      await readTimed(
        await fetch(`${base}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer client-key' },
          body: chatBody(stream),
        }),
      )
    ).bytes;

  it('keeps answering byte for byte when the copy thread dies mid-run, counts the lost copies, restarts it', async () => {
    const mirror = await holdingReceiver();
    // Restarted 3 s after the kill: long enough that every request below is asked while no thread
    // is up, however slow the host (at 1 s a loaded host copied some of `after` on the new thread).
    const sut = await gateway(`${mirror.url}/mirror`, {
      copyTimeoutMs: 30_000,
      copyRestartBackoffMs: () => 3000,
    });
    try {
      const direct = { json: await askChat(primary.url, false), sse: await askChat(primary.url, true) };
      for (let i = 0; i < 4; i++) expect((await askChat(sut.url, false)).equals(direct.json)).toBe(true);
      // Four copies on their way, held by the receiver: the thread's pending copies.
      await waitFor(() => mirror.arrivals.length === 4, { timeoutMs: 5000, description: '4 copies held' });
      const during = Array.from({ length: 6 }, (_, i) => askChat(sut.url, i % 2 === 1));
      await sut.terminateCopyWorker();
      const after = Array.from({ length: 4 }, (_, i) => askChat(sut.url, i % 2 === 1));
      const answers = await Promise.all([...during, ...after]);
      answers.forEach((bytes, i) =>
        expect(bytes.toString()).toBe((i % 2 === 1 ? direct.sse : direct.json).toString()),
      );
      const dead = sut.stats();
      expect(dead).toMatchObject({ forwarded: 14, copied: 0, copyWorkerDeaths: 1, mirroring: true });
      // The 4 held copies and those of `during` handed over before the kill failed; the rest,
      // offered while no thread was up, were dropped. None is lost from the counts.
      expect(dead.copiesFailed).toBeGreaterThanOrEqual(4);
      expect(dead.copiesFailed + dead.copiesDropped).toBe(14);
      // Restarted after the backoff: copies arrive again, redacted.
      mirror.holding = false;
      await waitFor(
        async () => {
          expect((await askChat(sut.url, false)).equals(direct.json)).toBe(true);
          return sut.stats().copied > 0;
        },
        { timeoutMs: 15_000, intervalMs: 100, description: 'a copy accepted after the restart' },
      );
      const last = mirror.arrivals.at(-1)!;
      expect(last).toContain('[EMAIL]');
      expect(last).not.toContain('jane.doe@example.com');
      expect(sut.stats().copyWorkerDeaths).toBe(1);
    } finally {
      await sut.close();
      await mirror.close();
    }
  }, 40_000);

  it('stops copying within a second of the kill switch, stays a proxy, and copies again when asked', async () => {
    const mirror = await holdingReceiver();
    const sut = await gateway(`${mirror.url}/mirror`, { copyTimeoutMs: 30_000 });
    try {
      const direct = await askChat(primary.url, false);
      for (let i = 0; i < 3; i++) await askChat(sut.url, false);
      await waitFor(() => mirror.arrivals.length === 3, { timeoutMs: 5000, description: '3 copies held' });
      const asked = performance.now();
      await sut.setMirroring(false);
      expect(performance.now() - asked).toBeLessThan(1000);
      for (let i = 0; i < 5; i++) expect((await askChat(sut.url, false)).equals(direct)).toBe(true);
      await new Promise((r) => setTimeout(r, 300));
      expect(mirror.arrivals).toHaveLength(3);
      // The held copies were abandoned (dropped); switched-off requests are not copies at all.
      expect(sut.stats()).toMatchObject({
        forwarded: 8,
        copied: 0,
        copiesDropped: 3,
        copiesFailed: 0,
        copyWorkerDeaths: 0,
        mirroring: false,
      });
      mirror.holding = false;
      await sut.setMirroring(true);
      expect((await askChat(sut.url, false)).equals(direct)).toBe(true);
      await waitFor(() => sut.stats().copied === 1, {
        timeoutMs: 5000,
        description: 'a copy after switching on',
      });
      expect(mirror.arrivals).toHaveLength(4);
      expect(sut.stats().mirroring).toBe(true);
    } finally {
      await sut.close();
      await mirror.close();
    }
  });

  it('refuses to switch mirroring on without a mirror', async () => {
    const sut = await gateway(null);
    try {
      await expect(sut.setMirroring(true)).rejects.toThrow(/no mirror/);
      expect(sut.stats().mirroring).toBe(false);
    } finally {
      await sut.close();
    }
  });

  it('fails open: a dead or hanging receiver never changes or delays what the caller gets', async () => {
    const dead = await serve(() => undefined);
    const deadUrl = dead.url;
    await dead.close(); // nothing listens there any more
    const hanging = await serve(() => undefined); // accepts, never answers
    for (const [mirrorUrl, cap] of [
      [`${deadUrl}/mirror`, 64],
      [`${hanging.url}/mirror`, 2],
    ] as const) {
      const sut: ShadowGateway = await gateway(mirrorUrl, { maxPendingCopies: cap, copyTimeoutMs: 500 });
      try {
        for (let i = 0; i < 5; i++) {
          const answer = await fetch(`${sut.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: chatBody(false),
          });
          expect(answer.status).toBe(200);
          expect(await answer.text()).toBe(JSON_ANSWER);
        }
        const deadline = Date.now() + 3000;
        while (sut.stats().copiesFailed + sut.stats().copiesDropped < 5 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        const stats = sut.stats();
        expect(stats.forwarded).toBe(5);
        expect(stats.copied).toBe(0);
        expect(stats.copiesFailed + stats.copiesDropped).toBe(5);
        if (cap === 2) expect(stats.copiesDropped).toBeGreaterThan(0);
      } finally {
        await sut.close();
      }
    }
    await hanging.close();
  });

  it('answers 502 naming the cause when the primary cannot be reached', async () => {
    const gone = await serve(() => undefined);
    const url = gone.url;
    await gone.close();
    const sut = await startShadowGateway({ host: '127.0.0.1', port: 0, primary: url, mirror: null });
    try {
      const answer = await fetch(`${sut.url}/v1/models`);
      expect(answer.status).toBe(502);
      expect(await answer.text()).toMatch(/primary unreachable/);
      expect(sut.stats().primaryUnreachable).toBe(1);
    } finally {
      await sut.close();
    }
  });

  describe('admin listener', () => {
    /** The value of series `name` whose labels include each of `labels` (`k="v"`), or null. */
    function sample(metrics: string, name: string, ...labels: string[]): number | null {
      for (const line of metrics.split('\n')) {
        if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
        if (labels.every((label) => line.includes(label)))
          return Number(line.slice(line.lastIndexOf(' ') + 1));
      }
      return null;
    }

    async function withAdmin(
      sut: ShadowGateway,
      token: string | null,
      run: (admin: { url: string; metrics(): Promise<string> }) => Promise<void>,
    ) {
      const admin = await startShadowGatewayAdmin(sut, { host: '127.0.0.1', port: 0, token });
      try {
        await run({ url: admin.url, metrics: async () => (await fetch(`${admin.url}/metrics`)).text() });
      } finally {
        await sut.close();
        await admin.close();
      }
    }

    const switchMirroring = (adminUrl: string, body: string, token?: string) =>
      fetch(`${adminUrl}/mirroring`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body,
      });

    it('answers /health with mirroring and the copy thread, and 503 once the gateway closes', async () => {
      const sut = await gateway(`${receiver.url}/mirror`, { copyRestartBackoffMs: () => 60_000 });
      const admin = await startShadowGatewayAdmin(sut, { host: '127.0.0.1', port: 0, token: null });
      try {
        const up = await fetch(`${admin.url}/health`);
        expect(up.status).toBe(200);
        expect(await up.json()).toEqual({ status: 'ok', mirroring: true, copyThreadUp: true });
        // A dead copy thread leaves the proxy serving (fail-open): still 200, the thread shown down.
        await sut.terminateCopyWorker();
        const restarting = await fetch(`${admin.url}/health`);
        expect(restarting.status).toBe(200);
        expect(await restarting.json()).toEqual({ status: 'ok', mirroring: true, copyThreadUp: false });
        const closed = sut.close();
        const closing = await fetch(`${admin.url}/health`);
        expect(closing.status).toBe(503);
        expect(await closing.json()).toEqual({ status: 'closing' });
        await closed;
      } finally {
        await sut.close();
        await admin.close();
      }
    });

    it('counts forwarded requests, copies by outcome and copy thread restarts in /metrics', async () => {
      copies.length = 0;
      const sut = await gateway(`${receiver.url}/mirror`, { copyRestartBackoffMs: () => 60_000 });
      await withAdmin(sut, null, async (admin) => {
        const before = await admin.metrics();
        expect(sample(before, 'fathom_shadow_gateway_forwarded_total', 'service="shadow-gateway"')).toBe(0);
        expect(sample(before, 'fathom_shadow_gateway_mirroring')).toBe(1);
        expect(sample(before, 'fathom_shadow_gateway_copy_thread_up')).toBe(1);
        for (let i = 0; i < 3; i++) await askChat(sut.url, false);
        await fetch(`${sut.url}/v1/nope`).then((r) => r.text());
        await waitFor(() => sut.stats().copied === 3, { timeoutMs: 5000, description: '3 copies' });
        const after = await admin.metrics();
        expect(sample(after, 'fathom_shadow_gateway_forwarded_total')).toBe(4);
        expect(sample(after, 'fathom_shadow_gateway_primary_unreachable_total')).toBe(0);
        expect(sample(after, 'fathom_shadow_gateway_refused_total')).toBe(0);
        expect(sample(after, 'fathom_shadow_gateway_copies_total', 'outcome="copied"')).toBe(3);
        expect(sample(after, 'fathom_shadow_gateway_copies_total', 'outcome="dropped"')).toBe(0);
        expect(sample(after, 'fathom_shadow_gateway_copies_total', 'outcome="failed"')).toBe(0);
        expect(sample(after, 'fathom_shadow_gateway_copies_total', 'outcome="too_large"')).toBe(0);
        expect(after).toContain('# TYPE fathom_shadow_gateway_copies_total counter');
        expect(after).toContain('process_cpu_user_seconds_total');
        // No thread until the restart (a minute away): offers are dropped, the death counted.
        await sut.terminateCopyWorker();
        await askChat(sut.url, false);
        const dead = await admin.metrics();
        expect(sample(dead, 'fathom_shadow_gateway_copy_thread_restarts_total')).toBe(1);
        expect(sample(dead, 'fathom_shadow_gateway_copy_thread_up')).toBe(0);
        expect(sample(dead, 'fathom_shadow_gateway_copies_total', 'outcome="dropped"')).toBe(1);
      });
    });

    it('counts requests the primary could not be reached for', async () => {
      const gone = await serve(() => undefined);
      await gone.close();
      const sut = await startShadowGateway({ host: '127.0.0.1', port: 0, primary: gone.url, mirror: null });
      await withAdmin(sut, null, async (admin) => {
        expect((await fetch(`${sut.url}/v1/models`)).status).toBe(502);
        const metrics = await admin.metrics();
        expect(sample(metrics, 'fathom_shadow_gateway_primary_unreachable_total')).toBe(1);
        expect(sample(metrics, 'fathom_shadow_gateway_forwarded_total')).toBe(0);
        expect(sample(metrics, 'fathom_shadow_gateway_mirroring')).toBe(0);
      });
    });

    it('stops copying within a second of POST /mirroring off, stays a proxy, and copies again on', async () => {
      copies.length = 0;
      const sut = await gateway(`${receiver.url}/mirror`);
      await withAdmin(sut, 'admin-secret', async (admin) => {
        const direct = await askChat(primary.url, false);
        await askChat(sut.url, false);
        await waitFor(() => copies.length === 1, { timeoutMs: 5000, description: 'the first copy' });
        const asked = performance.now();
        const off = await switchMirroring(admin.url, '{"enabled": false}', 'admin-secret');
        expect(performance.now() - asked).toBeLessThan(1000);
        expect(off.status).toBe(200);
        expect(await off.json()).toEqual({ mirroring: false });
        for (let i = 0; i < 3; i++) expect((await askChat(sut.url, false)).equals(direct)).toBe(true);
        await new Promise((r) => setTimeout(r, 300));
        expect(copies).toHaveLength(1);
        expect(await (await fetch(`${admin.url}/health`)).json()).toMatchObject({ mirroring: false });
        expect(sample(await admin.metrics(), 'fathom_shadow_gateway_mirroring')).toBe(0);

        const on = await switchMirroring(admin.url, '{"enabled": true}', 'admin-secret');
        expect(await on.json()).toEqual({ mirroring: true });
        await askChat(sut.url, false);
        await waitFor(() => copies.length === 2, { timeoutMs: 5000, description: 'a copy after on' });
        // Counted once the copy thread reports (coalesced, within 50 ms); the one made before
        // the switch was counted when the thread was ended (its last report), not dropped.
        await waitFor(() => sut.stats().copied === 2, { timeoutMs: 5000, description: 'both counted' });
        expect(sut.stats()).toMatchObject({ forwarded: 5, copied: 2, copiesDropped: 0, mirroring: true });
      });
    });

    it('refuses POST /mirroring without the token (401), reads /health and /metrics without', async () => {
      const sut = await gateway(`${receiver.url}/mirror`);
      await withAdmin(sut, 'admin-secret', async (admin) => {
        for (const token of [undefined, 'admin-secreT', 'admin-secret-longer']) {
          const refused = await switchMirroring(admin.url, '{"enabled": false}', token);
          expect(refused.status).toBe(401);
          expect(refused.headers.get('www-authenticate')).toBe('Bearer');
          expect(await refused.text()).toMatch(/bearer token/);
        }
        expect(sut.stats().mirroring).toBe(true);
        expect((await fetch(`${admin.url}/health`)).status).toBe(200);
        expect((await fetch(`${admin.url}/metrics`)).status).toBe(200);
      });
    });

    it('answers 400 naming the problem for a bad body, 413 for a long one, 404 elsewhere, and keeps serving', async () => {
      const sut = await gateway(`${receiver.url}/mirror`);
      await withAdmin(sut, null, async (admin) => {
        const bad: Array<[string, RegExp]> = [
          ['', /not JSON/],
          ['{"enabled": fals', /not JSON/],
          ['{"enabled": "false"}', /enabled: .*expected boolean, received string/],
          ['{}', /enabled: .*expected boolean, received undefined/],
          ['[true]', /body: .*expected object, received array/],
          ['null', /body: .*expected object, received null/],
          ['{"enabled": false, "force": true}', /Unrecognized key.*force/],
        ];
        for (const [body, why] of bad) {
          const answer = await switchMirroring(admin.url, body);
          expect(answer.status).toBe(400);
          expect(((await answer.json()) as { error: { message: string } }).error.message).toMatch(why);
        }
        const long = await switchMirroring(
          admin.url,
          `{"enabled": false, "pad": "${'x'.repeat(64 * 1024)}"}`,
        );
        expect(long.status).toBe(413);
        for (const [method, path] of [
          ['GET', '/'],
          ['GET', '/mirroring'],
          ['POST', '/health'],
          ['DELETE', '/metrics'],
          ['GET', '/v1/chat/completions'],
        ]) {
          const answer = await fetch(`${admin.url}${path}`, { method });
          expect(answer.status).toBe(404);
          expect(await answer.text()).toMatch(/GET \/health, GET \/metrics, POST \/mirroring/);
        }
        expect(sut.stats().mirroring).toBe(true);
        expect((await fetch(`${admin.url}/health?probe=1`)).status).toBe(200);
      });
    });

    it('answers 409 when asked to mirror without a mirror', async () => {
      const sut = await gateway(null);
      await withAdmin(sut, null, async (admin) => {
        const answer = await switchMirroring(admin.url, '{"enabled": true}');
        expect(answer.status).toBe(409);
        expect(await answer.text()).toMatch(/no mirror/);
      });
    });
  });

  describe('with the official openai client against the simulator', () => {
    let sim: SimTarget;
    beforeAll(async () => {
      sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } as never });
    });
    afterAll(async () => sim?.close());

    it('streams, answers and calls tools through the gateway as the primary does', async () => {
      copies.length = 0;
      const sut = await startShadowGateway({
        host: '127.0.0.1',
        port: 0,
        primary: sim.url,
        mirror: { url: `${receiver.url}/mirror` },
      });
      try {
        const client = new OpenAI({ baseURL: `${sut.url}/v1`, apiKey: 'client-key', maxRetries: 0 });
        const [model] = (await client.models.list()).data;
        const plain = await client.chat.completions.create({
          model: model.id,
          messages: [{ role: 'user', content: 'Say hello.' }],
          max_tokens: 16,
        });
        expect(plain.choices[0].message.content?.length).toBeGreaterThan(0);
        const stream = await client.chat.completions.create({
          model: model.id,
          messages: [{ role: 'user', content: 'Count to five.' }],
          max_tokens: 16,
          stream: true,
        });
        let streamed = '';
        for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
        expect(streamed.length).toBeGreaterThan(0);
        const withTools = await client.chat.completions.create({
          model: model.id,
          messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
          tools: [
            {
              type: 'function',
              function: {
                name: 'weather',
                parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
              },
            },
          ],
          tool_choice: 'required',
          max_tokens: 32,
        });
        expect(withTools.choices[0].message.tool_calls?.[0]?.type).toBe('function');
        const deadline = Date.now() + 5000;
        while (copies.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        expect(copies).toHaveLength(3); // the three chat requests, not /v1/models
      } finally {
        await sut.close();
      }
    });
  });
});
