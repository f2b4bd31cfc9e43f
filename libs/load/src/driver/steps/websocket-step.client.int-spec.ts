import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer } from 'ws';
import { WebSocketStepSchema } from '@fathom/contracts';
import { RequestTimeout } from '../request-outcome';
import { stepTestRequest } from './step-test.util';
import { WebSocketStepClient } from './websocket-step.client';

/**
 * A loopback WebSocket server; the path picks the behaviour: /chat streams tokens then a done
 * frame, /echo echoes, /text answers a non-JSON frame, /cut closes after one frame, /hang says
 * nothing, /deny refuses the upgrade with 403, /bad completes the handshake by hand and sends a
 * frame with a reserved opcode.
 */
async function wsServer() {
  const http = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  const headers: Record<string, string | string[] | undefined>[] = [];
  const sockets = new Set<Socket>();
  http.on('upgrade', (req, socket: Socket, head) => {
    sockets.add(socket);
    headers.push(req.headers);
    if (req.url === '/deny') {
      socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (req.url === '/bad') {
      const accept = createHash('sha1')
        .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
        .digest('base64');
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      );
      socket.write(Buffer.from([0x83, 0x00])); // FIN + reserved opcode 3
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data) => {
        const text = String(data);
        if (req.url === '/echo') ws.send(text);
        if (req.url === '/text') ws.send('not json');
        if (req.url === '/cut') {
          ws.send('{"token":"a"}');
          ws.close(1011, 'backend gone');
        }
        if (req.url === '/chat') {
          let i = 0;
          const timer = setInterval(() => {
            if (i < 3) ws.send(JSON.stringify({ token: `t${i++}` }));
            else {
              clearInterval(timer);
              ws.send(JSON.stringify({ done: true, text: 't0t1t2' }));
            }
          }, 5);
        }
      });
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const port = (http.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    headers,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      for (const s of sockets) s.destroy();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}

const client = (baseUrl: string, step: Record<string, unknown>) =>
  new WebSocketStepClient(
    WebSocketStepSchema.parse({
      kind: 'websocket',
      name: 'ws',
      send: [{ ask: 'hi' }],
      until: { frames: 1 },
      ...step,
    }),
    baseUrl,
    { authorization: 'Bearer k' },
  );

async function callOnce(sut: WebSocketStepClient, cancelAfterMs = 3000) {
  const request = stepTestRequest();
  const timer = setTimeout(() => request.cancel.abort(new RequestTimeout(cancelAfterMs)), cancelAfterMs);
  try {
    return await sut.call({ request, toolCalls: [] }, performance.now());
  } finally {
    clearTimeout(timer);
  }
}

describe(WebSocketStepClient.name, () => {
  let server: Awaited<ReturnType<typeof wsServer>>;
  beforeAll(async () => (server = await wsServer()));
  afterAll(() => server.close());

  it('reads frames until a JSON predicate holds, timing the first frame; the body is every frame', async () => {
    const answer = await callOnce(
      client(server.baseUrl, { url: '/chat', until: { path: '$.done', equals: true } }),
    );
    expect(answer).toMatchObject({ status: 101, httpStatus: 101, messages: 4, statusClass: null });
    expect(answer.failure).toBeUndefined();
    expect(answer.firstMessageMs).toBe(answer.messageOffsetsMs[0]);
    expect(answer.messageOffsetsMs[3]).toBeGreaterThan(answer.messageOffsetsMs[0]);
    expect(JSON.parse(answer.body)).toEqual([
      { token: 't0' },
      { token: 't1' },
      { token: 't2' },
      { done: true, text: 't0t1t2' },
    ]);
    expect(server.headers.at(-1)).toMatchObject({ authorization: 'Bearer k', 'x-fathom-run': 'run-1' });
  });

  it('takes a reply of one frame as its text, with an absolute ws:// URL', async () => {
    const url = server.baseUrl.replace('http://', 'ws://').replace('/v1', '/echo');
    const answer = await callOnce(client('http://unused:1', { url, send: ['ping'], until: { frames: 1 } }));
    expect(answer.body).toBe('ping');
  });

  it('classes a refused upgrade by its status, a reserved opcode as protocol, a non-JSON frame as malformed-json', async () => {
    const denied = await callOnce(client(server.baseUrl, { url: '/deny' }));
    expect(denied).toMatchObject({ status: 403, statusClass: 'http-4xx' });
    expect((await callOnce(client(server.baseUrl, { url: '/bad' }))).failure?.errorClass).toBe('protocol');
    const text = await callOnce(client(server.baseUrl, { url: '/text', until: { path: '$.done' } }));
    expect(text.failure).toEqual({ errorClass: 'malformed-json', message: 'frame 1 is not JSON: not json' });
  });

  it('classes a close before the reply as stream-truncated, a hang as timeout, no server as connect', async () => {
    const cut = await callOnce(client(server.baseUrl, { url: '/cut', until: { frames: 3 } }));
    expect(cut.failure?.errorClass).toBe('stream-truncated');
    expect(cut.failure?.message).toContain('code 1011: backend gone');
    expect(cut.messages).toBe(1);
    expect((await callOnce(client(server.baseUrl, { url: '/hang' }), 150)).failure?.errorClass).toBe(
      'timeout',
    );
    const gone = await wsServer();
    await gone.close();
    expect((await callOnce(client(gone.baseUrl, { url: '/echo' }))).failure?.errorClass).toBe('connect');
  });
});
