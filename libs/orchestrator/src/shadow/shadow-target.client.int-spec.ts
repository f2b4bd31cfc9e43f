import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@fathom/testing';
import { MAX_ANSWER_BYTES, callChatTarget, embedTexts } from './shadow-target.client';

/** A target answering every request with SSE-looking chunks of 64 KiB, without end, while the caller reads. */
async function endlessTarget(status: number): Promise<{ url: string; server: Server; closed: () => number }> {
  let closed = 0;
  const chunk = `data: {"choices":[{"delta":{"content":"${'x'.repeat(64 * 1024 - 40)}"}}]}\n\n`;
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(status, { 'content-type': 'text/event-stream' });
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
    };
    res.on('drain', pump);
    res.once('close', () => closed++);
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    server,
    closed: () => closed,
  };
}

describe('replaying to a shadow target that answers without end', () => {
  // Before, the whole answer was held until the request timed out (30 s by default): at
  // loopback speed gigabytes per replay, times the campaign's concurrency.
  it.each([200, 500])(
    'stops reading an HTTP %s answer past the cap, fails the sample, closes the connection',
    async (status) => {
      const target = await endlessTarget(status);
      try {
        const started = performance.now();
        const reply = await callChatTarget({ baseUrl: target.url }, { messages: [] }, 30_000);
        expect(reply.ok).toBe(false);
        expect(reply.error).toMatch(/over 8 MiB: not read further/);
        expect(performance.now() - started).toBeLessThan(10_000);
        await waitFor(() => target.closed() === 1, {
          timeoutMs: 5000,
          description: 'the target saw the answer cut off',
        });
      } finally {
        target.server.closeAllConnections();
        await new Promise<void>((r) => target.server.close(() => r()));
      }
    },
  );

  it('refuses an embeddings answer past the cap', async () => {
    const target = await endlessTarget(200);
    try {
      await expect(embedTexts({ baseUrl: target.url, model: 'e' }, ['a'], 30_000)).rejects.toThrow(
        `embeddings answer over ${MAX_ANSWER_BYTES / 1024 / 1024} MiB`,
      );
    } finally {
      target.server.closeAllConnections();
      await new Promise<void>((r) => target.server.close(() => r()));
    }
  });
});
