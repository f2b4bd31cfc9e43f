import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { classifyError } from '../driver/error-class.util';
import { RequestCancel, RequestTimeout } from '../driver/request-outcome';
import { BufferedExchange } from './buffered.exchange';
import { Http1Client } from './http1.client';

interface Result {
  status: number;
  body: string;
  requestId: string | undefined;
  error: (Error & { code?: string }) | null;
  headersReceived: boolean;
  exchange: BufferedExchange;
}

function send(client: Http1Client, body = '{}', headers: Record<string, string> = {}): Promise<Result> {
  const exchange = new BufferedExchange(1 << 20, performance.now());
  exchange.http1Request = client.requestText(headers, Http1Client.bodyTail(body));
  client.dispatch(exchange);
  return exchange.done.then(
    () => ({
      status: exchange.status,
      body: exchange.text(),
      requestId: exchange.requestId,
      error: null,
      headersReceived: true,
      exchange,
    }),
    (error: Error) => ({
      status: exchange.status,
      body: exchange.text(),
      requestId: undefined,
      error,
      headersReceived: exchange.headersReceived,
      exchange,
    }),
  );
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function clientFor(port: number, connections = 4, path = '/v1/x'): Http1Client {
  return new Http1Client({
    origin: `http://127.0.0.1:${port}`,
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json' },
    connections,
  });
}

/** A node:http server that counts connections and records each request. */
async function httpServer(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const sockets: Socket[] = [];
  const requests: { url: string; body: string; headers: IncomingMessage['headers']; socket: number }[] = [];
  let concurrent = 0;
  let maxConcurrent = 0;
  const server = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      requests.push({ url: req.url ?? '', body, headers: req.headers, socket: sockets.indexOf(req.socket) });
      handler(req, res, body);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.push(socket);
    maxConcurrent = Math.max(maxConcurrent, ++concurrent);
    socket.on('close', () => concurrent--);
  });
  const port = await listen(server);
  return { server, port, sockets, requests, maxConcurrent: () => maxConcurrent };
}

/** A raw TCP server: `onRequest` gets each socket's n-th request (its bytes) and answers as it likes. */
async function rawServer(onRequest: (socket: Socket, index: number, connection: number) => void) {
  let connections = 0;
  const server = createNetServer((socket) => {
    const connection = connections++;
    let index = 0;
    let pending = '';
    socket.on('data', (chunk) => {
      pending += chunk.toString('latin1');
      // Requests from the client always carry content-length; one request per complete head+body.
      for (;;) {
        const headEnd = pending.indexOf('\r\n\r\n');
        if (headEnd === -1) return;
        const length = Number(/content-length: (\d+)/i.exec(pending.slice(0, headEnd))?.[1] ?? 0);
        if (pending.length < headEnd + 4 + length) return;
        pending = pending.slice(headEnd + 4 + length);
        onRequest(socket, index++, connection);
      }
    });
    socket.on('error', () => undefined);
  });
  const port = await listen(server);
  return { server, port, connections: () => connections };
}

const cancelOf = () => new RequestCancel();

describe(Http1Client.name, () => {
  const servers: Server[] = [];
  const clients: Http1Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  });
  const track = <T extends { server: Server }>(s: T): T => (servers.push(s.server), s);
  const make = (port: number, connections?: number, path?: string) => {
    const client = clientFor(port, connections, path);
    clients.push(client);
    return client;
  };

  it('sends method, path, host, static and per-request headers and the body in one request', async () => {
    const target = track(await httpServer((_req, res, body) => res.end(`got ${body}`)));
    const sut = make(target.port, 1, '/v1/chat/completions');
    const result = await send(sut, '{"prompt":"héllo"}', {
      traceparent: '00-abc-def-01',
      'x-fathom-run': 'run-1',
    });
    expect(result.error).toBeNull();
    expect(result.body).toBe('got {"prompt":"héllo"}');
    const [request] = target.requests;
    expect(request.url).toBe('/v1/chat/completions');
    expect(request.headers).toMatchObject({
      host: `127.0.0.1:${target.port}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength('{"prompt":"héllo"}')),
      traceparent: '00-abc-def-01',
      'x-fathom-run': 'run-1',
    });
  });

  it('refuses a header value with CR or LF (it would split the request)', async () => {
    const sut = make(1, 1);
    expect(() => sut.requestText({ 'x-fathom-run': 'a\r\nx-evil: 1' }, Http1Client.bodyTail(''))).toThrow(
      /invalid value/,
    );
    expect(() => sut.requestText({ 'bad name': 'a' }, Http1Client.bodyTail(''))).toThrow(
      /invalid header name/,
    );
  });

  it('reuses one keep-alive connection for sequential requests', async () => {
    const target = track(await httpServer((_req, res, body) => res.end(body)));
    const sut = make(target.port, 4);
    for (let i = 0; i < 5; i++) expect((await send(sut, `{"i":${i}}`)).body).toBe(`{"i":${i}}`);
    expect(target.sockets).toHaveLength(1);
    expect(sut.idleConnections).toBe(1);
  });

  it('opens at most N sockets and serves waiters in FIFO order', async () => {
    const target = track(await httpServer((_req, res, body) => setTimeout(() => res.end(body), 20)));
    const sut = make(target.port, 2);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => send(sut, `${i}`)));
    expect(results.map((r) => r.body)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
    expect(target.maxConcurrent()).toBeLessThanOrEqual(2);
    expect(target.sockets).toHaveLength(2);
    // Arrival order at the server follows dispatch order (two sockets: pairs may swap within a pair).
    const order = target.requests.map((r) => Number(r.body));
    for (let i = 0; i < order.length; i++) expect(Math.abs(order[i] - i)).toBeLessThanOrEqual(1);
  });

  it('does not reuse a socket after Connection: close', async () => {
    const target = track(
      await httpServer((_req, res, body) => {
        res.setHeader('connection', 'close');
        res.end(body);
      }),
    );
    const sut = make(target.port, 1);
    for (let i = 0; i < 3; i++) expect((await send(sut, `${i}`)).body).toBe(`${i}`);
    expect(target.sockets).toHaveLength(3);
    expect(sut.openConnections).toBe(0);
  });

  it('does not reuse an HTTP/1.0 socket without keep-alive, and reads a body until close', async () => {
    const target = track(
      await rawServer((socket) =>
        socket.end('HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil close'),
      ),
    );
    const sut = make(target.port, 1);
    expect((await send(sut)).body).toBe('until close');
    expect((await send(sut)).body).toBe('until close');
    expect(target.connections()).toBe(2);
  });

  it('skips 1xx interim responses and parses chunked bodies with extensions and trailers', async () => {
    const target = track(
      await rawServer((socket) =>
        socket.write(
          'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Request-Id: r-1\r\n\r\n' +
            '5;a=b\r\nhello\r\n6\r\n world\r\n0\r\nx-trailer: t\r\n\r\n',
        ),
      ),
    );
    const sut = make(target.port, 1);
    const first = await send(sut);
    expect(first).toMatchObject({ status: 200, body: 'hello world', requestId: 'r-1', error: null });
    expect((await send(sut)).body).toBe('hello world');
    expect(target.connections()).toBe(1);
  });

  it('retries once on a fresh connection when a reused idle socket closes before any response byte', async () => {
    // Connection 0 answers its first request, then closes on the second without a byte (the
    // keep-alive race); the retry lands on connection 1.
    const target = track(
      await rawServer((socket, index, connection) => {
        if (connection === 0 && index === 1) socket.destroy();
        else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      }),
    );
    const sut = make(target.port, 1);
    expect((await send(sut)).body).toBe('ok');
    const second = await send(sut);
    expect(second.error).toBeNull();
    expect(second.body).toBe('ok');
    expect(target.connections()).toBe(2);
  });

  it('does not retry a fresh connection that closes before the response: a connect error', async () => {
    const target = track(await rawServer((socket) => socket.destroy()));
    const sut = make(target.port, 1);
    const result = await send(sut);
    expect(result.error?.code).toBe('HTTP1_EARLY_CLOSE');
    expect(classifyError(result.error, cancelOf(), result.headersReceived)).toBe('connect');
    expect(target.connections()).toBe(1);
  });

  it('classifies a close in the middle of the body as a truncated stream', async () => {
    const target = track(
      await rawServer((socket) => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten b')),
    );
    const sut = make(target.port, 1);
    const result = await send(sut);
    expect(result.error?.code).toBe('HTTP1_EARLY_CLOSE');
    expect(result.error?.message).toMatch(/before the response body was complete/);
    expect(classifyError(result.error, cancelOf(), result.headersReceived)).toBe('stream-truncated');
    expect(sut.openConnections).toBe(0);
  });

  it('classifies a refused connection as connect', async () => {
    const closed = track(await rawServer(() => undefined));
    await new Promise((r) => closed.server.close(r));
    servers.length = 0;
    const sut = make(closed.port, 1);
    const result = await send(sut);
    expect(result.error?.code).toBe('ECONNREFUSED');
    expect(classifyError(result.error, cancelOf(), false)).toBe('connect');
    expect(sut.openConnections).toBe(0);
  });

  it.each([
    ['a malformed status line', 'HTTP/1.1 2x0 OK\r\n\r\n'],
    ['a malformed header', 'HTTP/1.1 200 OK\r\nbroken header\r\n\r\n'],
    ['a malformed chunk size', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nxyz\r\n'],
  ])('classifies %s as a protocol error, drops the socket and keeps serving', async (_name, reply) => {
    const target = track(
      await rawServer((socket, _index, connection) =>
        socket.write(connection === 0 ? reply : 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'),
      ),
    );
    const sut = make(target.port, 1);
    const bad = await send(sut);
    expect(bad.error?.code).toBe('HTTP1_PROTOCOL');
    expect(classifyError(bad.error, cancelOf(), bad.headersReceived)).toBe('protocol');
    expect((await send(sut)).body).toBe('ok');
    expect(target.connections()).toBe(2);
  });

  it('refuses a response head past 64 KiB as a protocol error', async () => {
    const target = track(
      await rawServer((socket) => socket.write(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(70 * 1024)}\r\n\r\n`)),
    );
    const sut = make(target.port, 1);
    const result = await send(sut);
    expect(result.error?.code).toBe('HTTP1_HEADERS_TOO_LARGE');
    expect(classifyError(result.error, cancelOf(), result.headersReceived)).toBe('protocol');
  });

  it('on timeout destroys the socket, frees the slot for the next request and classifies it as timeout', async () => {
    const target = track(
      await rawServer((socket, _index, connection) => {
        if (connection > 0) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
        // connection 0 never answers
      }),
    );
    const sut = make(target.port, 1);
    const cancel = new RequestCancel();
    const exchange = new BufferedExchange(1024, performance.now());
    exchange.http1Request = sut.requestText({}, Http1Client.bodyTail('{}'));
    cancel.onAbort((reason) => sut.cancel(exchange, reason));
    sut.dispatch(exchange);
    // A second request waits for the only slot.
    const queued = send(sut);
    const timer = setTimeout(() => cancel.abort(new RequestTimeout(50)), 50);
    const error = await exchange.done.then(
      () => null,
      (e: Error) => e,
    );
    clearTimeout(timer);
    expect(error).toBeInstanceOf(RequestTimeout);
    expect(classifyError(error, cancel, false)).toBe('timeout');
    expect((await queued).body).toBe('ok');
    expect(target.connections()).toBe(2);
  });

  it('removes a cancelled waiter from the queue without touching the busy socket', async () => {
    const target = track(await httpServer((_req, res, body) => setTimeout(() => res.end(body), 30)));
    const sut = make(target.port, 1);
    const first = send(sut, 'first');
    const waiter = new BufferedExchange(1024, performance.now());
    waiter.http1Request = sut.requestText({}, Http1Client.bodyTail('waiter'));
    sut.dispatch(waiter);
    const third = send(sut, 'third');
    sut.cancel(waiter, new RequestTimeout(1));
    await expect(waiter.done).rejects.toBeInstanceOf(RequestTimeout);
    expect((await first).body).toBe('first');
    expect((await third).body).toBe('third');
    expect(target.requests.map((r) => r.body)).toEqual(['first', 'third']);
    expect(target.sockets).toHaveLength(1);
  });

  it('stamps the send right before the socket write: a queued request reports its wait as send delay', async () => {
    const target = track(await httpServer((_req, res, body) => setTimeout(() => res.end(body), 40)));
    const sut = make(target.port, 1);
    const t0 = performance.now();
    const [a, b] = await Promise.all([send(sut, 'a'), send(sut, 'b')]);
    expect(a.exchange.sentMono - t0).toBeLessThan(40);
    // b waited for a's whole response (>= 40 ms) before it was written.
    expect(b.exchange.sentMono).toBeGreaterThanOrEqual(a.exchange.endMono - 0.001);
    expect(b.exchange.endMono - b.exchange.sentMono).toBeGreaterThanOrEqual(35);
  });

  it('ends queued and in-flight requests on close()', async () => {
    const target = track(await rawServer(() => undefined));
    const sut = clientFor(target.port, 1);
    const inFlight = send(sut);
    const queued = send(sut);
    await new Promise((r) => setTimeout(r, 20));
    await sut.close();
    expect((await inFlight).error?.code).toBe('HTTP1_CLIENT_CLOSED');
    expect((await queued).error?.code).toBe('HTTP1_CLIENT_CLOSED');
    expect(classifyError((await queued).error, cancelOf(), false)).toBe('aborted');
  });
});
