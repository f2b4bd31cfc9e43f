import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { waitFor } from '@fathom/testing';

const BIN = join(__dirname, '..', '..', '..', '..', 'bin', 'fathom.js');
const ANSWER = '{"id":"c","object":"chat.completion","choices":[]}';

/** A loopback server on a free port answering `status` and `body`, keeping each request body. */
async function serve(status: number, body: string) {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      bodies.push(text);
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

describe('fathom shadow gateway', () => {
  jest.setTimeout(60_000);

  it('stops copying on SIGUSR2 and copies again on the next, answering all along', async () => {
    const primary = await serve(200, ANSWER);
    const orchestrator = await serve(202, '{"accepted":true}');
    let child: ChildProcessWithoutNullStreams | null = null;
    try {
      const gateway = spawn(process.execPath, [
        BIN,
        ...['shadow', 'gateway', '--listen', '127.0.0.1:0', '--campaign', 'c1'],
        ...['--primary', primary.url, '--api', orchestrator.url],
      ]);
      child = gateway;
      let stdout = '';
      gateway.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      const url = await waitFor(() => /gateway on (http:\/\/\S+)/.exec(stdout)?.[1], {
        timeoutMs: 30_000,
        description: 'the gateway to listen',
      });
      const ask = async () => {
        const answer = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"model":"m","messages":[{"role":"user","content":"mail ada@example.com"}]}',
        });
        expect(await answer.text()).toBe(ANSWER);
      };
      await ask();
      await waitFor(() => orchestrator.bodies.length === 1, { description: 'the first copy' });
      expect(orchestrator.bodies[0]).toContain('[EMAIL]');

      gateway.kill('SIGUSR2');
      // The 1 s bound is the gateway's (shadow-gateway.int-spec); here a loaded CI host may take
      // longer to schedule the child at all.
      await waitFor(() => stdout.includes('mirroring off'), {
        timeoutMs: 10_000,
        description: 'mirroring off',
      });
      for (let i = 0; i < 3; i++) await ask();
      gateway.kill('SIGUSR2');
      await waitFor(() => stdout.includes('mirroring on'), { description: 'mirroring on' });
      await ask();
      await waitFor(() => orchestrator.bodies.length === 2, { description: 'a copy after mirroring on' });

      const exited = new Promise<number | null>((r) => gateway.once('exit', r));
      gateway.kill('SIGTERM');
      expect(await exited).toBe(0);
      child = null;
      expect(stdout).toContain('forwarded 5 (primary unreachable 0), copied 2, dropped 0, failed 0');
      expect(primary.bodies).toHaveLength(5);
    } finally {
      child?.kill('SIGKILL');
      await primary.close();
      await orchestrator.close();
    }
  });
});
