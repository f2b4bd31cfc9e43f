import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How the fixture answers one request (tests set it per server). */
export type Behaviour =
  | { kind: 'stream'; tokens: number; gapMs: number; firstTokenMs?: number; usage?: boolean }
  | { kind: 'json'; delayMs: number }
  | { kind: 'close-early'; tokens: number }
  | { kind: 'malformed' }
  | { kind: 'never' }
  | { kind: 'status'; status: number };

export interface ReceivedRequest {
  headers: IncomingMessage['headers'];
  body: string;
  /** performance.now() in this process when the server saw the request, and each token written. */
  receivedMono: number;
  emitMono: number[];
}

/**
 * A small OpenAI-compatible SSE server on loopback for the engine's tests (the shared simulated
 * target is `@fathom/sim`; this one lets a test choose exact failure shapes).
 */
export async function startLocalOpenAi(
  behave: (req: IncomingMessage, body: string) => Behaviour,
): Promise<{ url: string; received: ReceivedRequest[]; close: () => Promise<void> }> {
  const received: ReceivedRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const seen: ReceivedRequest = {
        headers: req.headers,
        body,
        receivedMono: performance.now(),
        emitMono: [],
      };
      received.push(seen);
      answer(behave(req, body), res, seen);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

function answer(b: Behaviour, res: ServerResponse, seen: ReceivedRequest): void {
  switch (b.kind) {
    case 'status':
      res.writeHead(b.status, { 'content-type': 'application/json' }).end('{"error":{"message":"no"}}');
      return;
    case 'never':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      return;
    case 'malformed':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk('ok'));
      res.end('data: {"choices": [ {"delta": {"content": "br\n\n');
      return;
    case 'close-early': {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < b.tokens; i++) res.write(chunk(` t${i}`));
      setTimeout(() => res.socket?.destroy(), 5);
      return;
    }
    case 'json':
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'c1',
            object: 'chat.completion',
            model: 'm',
            choices: [
              { index: 0, message: { role: 'assistant', content: 'hello there' }, finish_reason: 'stop' },
            ],
            usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
          }),
        );
      }, b.delayMs);
      return;
    case 'stream': {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      let i = 0;
      const next = () => {
        if (res.destroyed) return;
        if (i === b.tokens) {
          const last = {
            id: 'c1',
            object: 'chat.completion.chunk',
            model: 'm',
            choices: [{ index: 0, delta: {}, finish_reason: 'length' }],
          };
          res.write(`data: ${JSON.stringify(last)}\n\n`);
          if (b.usage !== false)
            res.write(
              `data: ${JSON.stringify({ id: 'c1', choices: [], usage: { prompt_tokens: 7, completion_tokens: b.tokens, total_tokens: 7 + b.tokens, prompt_tokens_details: { cached_tokens: 3 } } })}\n\n`,
            );
          res.end('data: [DONE]\n\n');
          return;
        }
        seen.emitMono.push(performance.now());
        res.write(chunk(` w${i}`));
        i++;
        setTimeout(next, b.gapMs);
      };
      setTimeout(next, b.firstTokenMs ?? b.gapMs);
      return;
    }
  }
}
