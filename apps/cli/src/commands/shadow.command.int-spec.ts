import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { childrenOf, environOf, processState, waitFor } from '@fathom/testing';

const BIN = join(__dirname, '..', '..', '..', '..', 'bin', 'fathom.js');
const ANSWER = '{"id":"c","object":"chat.completion","choices":[]}';

/** A loopback server on a free port answering `status` and `body`, keeping each request body. */
async function serve(status: number, body: string) {
  const bodies: string[] = [];
  const requests: Array<{ url: string; authorization: string | undefined }> = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      bodies.push(text);
      requests.push({ url: req.url ?? '', authorization: req.headers.authorization });
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    requests,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/**
 * Copies the gateway at `admin` counts accepted. The receiver holding a copy is not enough: the
 * copy thread counts it a turn later, and a kill switch in between counts it dropped.
 */
async function copied(admin: string): Promise<number> {
  const metrics = await (await fetch(`${admin}/metrics`)).text();
  return Number(/^fathom_shadow_gateway_copies_total\{outcome="copied"[^}]*\} (\d+)$/m.exec(metrics)?.[1]);
}

describe('fathom shadow gateway', () => {
  jest.setTimeout(60_000);

  it('stops copying on SIGUSR2 and copies again on the next, answering all along', async () => {
    const primary = await serve(200, ANSWER);
    const orchestrator = await serve(202, '{"accepted":true}');
    let child: ChildProcessWithoutNullStreams | null = null;
    try {
      const gateway = spawn(
        process.execPath,
        [
          BIN,
          ...['shadow', 'gateway', '--listen', '127.0.0.1:0', '--campaign', 'c1'],
          ...['--admin-listen', '127.0.0.1:0'],
          ...['--primary', primary.url, '--api', orchestrator.url],
        ],
        { env: { ...process.env, MALLOC_ARENA_MAX: undefined } },
      );
      child = gateway;
      let stdout = '';
      gateway.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      const admin = await waitFor(() => /admin on (http:\/\/\S+)/.exec(stdout)?.[1], {
        timeoutMs: 30_000,
        description: 'the gateway to listen',
      });
      const url = /gateway on (http:\/\/\S+)/.exec(stdout)![1];
      const ask = async () => {
        const answer = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"model":"m","messages":[{"role":"user","content":"mail ada@example.com"}]}',
        });
        expect(await answer.text()).toBe(ANSWER);
      };
      await ask();
      await waitFor(async () => (await copied(admin)) === 1, { description: 'the first copy' });
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
      await waitFor(async () => (await copied(admin)) === 2, { description: 'a copy after mirroring on' });

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

  it('takes every setting from the environment, a flag winning, and serves the admin listener', async () => {
    const primary = await serve(200, ANSWER);
    const orchestrator = await serve(202, '{"accepted":true}');
    let child: ChildProcessWithoutNullStreams | null = null;
    try {
      const gateway = spawn(process.execPath, [BIN, 'shadow', 'gateway', '--campaign', 'c-flag'], {
        env: {
          ...process.env,
          FATHOM_SHADOW_LISTEN: '127.0.0.1:0',
          FATHOM_SHADOW_ADMIN_LISTEN: '127.0.0.1:0',
          FATHOM_SHADOW_CAMPAIGN: 'c-env', // the flag wins
          FATHOM_SHADOW_PRIMARY: primary.url,
          FATHOM_API_URL: orchestrator.url,
          FATHOM_API_TOKEN: 'env-token',
          FATHOM_SHADOW_SAMPLE_RATE: '1',
          FATHOM_SHADOW_PRIMARY_CONNECTIONS: '4',
          FATHOM_SHADOW_MAX_BUFFERED_BODY: '65536',
        },
      });
      child = gateway;
      let stdout = '';
      gateway.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      const admin = await waitFor(() => /admin on (http:\/\/\S+)/.exec(stdout)?.[1], {
        timeoutMs: 30_000,
        description: 'the admin listener',
      });
      const url = /gateway on (http:\/\/\S+)/.exec(stdout)![1];
      expect(stdout).toContain(`-> primary ${primary.url}, copies to ${orchestrator.url}`);
      const ask = async () => {
        const answer = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"model":"m","messages":[{"role":"user","content":"hi"}]}',
        });
        expect(await answer.text()).toBe(ANSWER);
      };
      await ask();
      await waitFor(async () => (await copied(admin)) === 1, { description: 'the first copy' });
      expect(orchestrator.requests[0]).toEqual({
        url: '/v1/shadow-campaigns/c-flag/mirror',
        authorization: 'Bearer env-token',
      });

      expect(await (await fetch(`${admin}/health`)).json()).toEqual({
        status: 'ok',
        mirroring: true,
        copyThreadUp: true,
      });
      const mirroring = (token: string) =>
        fetch(`${admin}/mirroring`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
          body: '{"enabled":false}',
        });
      expect((await mirroring('not-the-token')).status).toBe(401);
      expect((await mirroring('env-token')).status).toBe(200);
      await ask();
      const metrics = await (await fetch(`${admin}/metrics`)).text();
      expect(metrics).toMatch(/^fathom_shadow_gateway_forwarded_total\{[^}]*\} 2$/m);
      expect(metrics).toMatch(/^fathom_shadow_gateway_mirroring\{[^}]*\} 0$/m);

      const exited = new Promise<number | null>((r) => gateway.once('exit', r));
      gateway.kill('SIGTERM');
      expect(await exited).toBe(0);
      child = null;
      expect(stdout).toContain('forwarded 2 (primary unreachable 0), copied 1, dropped 0, failed 0');
      expect(orchestrator.requests).toHaveLength(1);
    } finally {
      child?.kill('SIGKILL');
      await primary.close();
      await orchestrator.close();
    }
  });

  it('drains on SIGTERM: /health says 503 while it still forwards, a second signal closes', async () => {
    const primary = await serve(200, ANSWER);
    let child: ChildProcessWithoutNullStreams | null = null;
    try {
      const gateway = spawn(
        process.execPath,
        [BIN, 'shadow', 'gateway', '--campaign', 'c1', '--sample-rate', '0', '--drain-ms', '60000'],
        {
          env: {
            ...process.env,
            FATHOM_SHADOW_LISTEN: '127.0.0.1:0',
            FATHOM_SHADOW_ADMIN_LISTEN: '127.0.0.1:0',
            FATHOM_SHADOW_PRIMARY: primary.url,
          },
        },
      );
      child = gateway;
      let stdout = '';
      gateway.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      const admin = await waitFor(() => /admin on (http:\/\/\S+)/.exec(stdout)?.[1], {
        timeoutMs: 30_000,
        description: 'the admin listener',
      });
      const url = /gateway on (http:\/\/\S+)/.exec(stdout)![1];
      const health = async () => {
        const answer = await fetch(`${admin}/health`);
        return { status: answer.status, body: (await answer.json()) as { status: string } };
      };
      expect((await health()).status).toBe(200);

      gateway.kill('SIGTERM');
      await waitFor(() => stdout.includes('draining'), { description: 'the drain' });
      expect(await health()).toEqual({ status: 503, body: { status: 'draining' } });
      const answer = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"model":"m","messages":[{"role":"user","content":"hi"}]}',
      });
      expect(await answer.text()).toBe(ANSWER);

      // Well before the 60 s drain ends: the second signal closes now.
      const exited = new Promise<number | null>((r) => gateway.once('exit', r));
      gateway.kill('SIGTERM');
      expect(await exited).toBe(0);
      child = null;
      expect(stdout).toContain('forwarded 1 (primary unreachable 0)');
    } finally {
      child?.kill('SIGKILL');
      await primary.close();
    }
  });

  it('names the empty campaign and the bad admin address instead of starting', async () => {
    const run = (args: string[], env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const cli = spawn(process.execPath, [BIN, 'shadow', 'gateway', ...args], {
          env: { ...process.env, ...env },
        });
        let stderr = '';
        cli.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
        cli.once('exit', (code) => resolve({ code, stderr }));
      });
    const empty = await run([], { FATHOM_SHADOW_CAMPAIGN: '', FATHOM_SHADOW_PRIMARY: 'http://127.0.0.1:1' });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('--campaign (or FATHOM_SHADOW_CAMPAIGN) is empty');
    const badAdmin = await run(['--listen', '127.0.0.1:0'], {
      FATHOM_SHADOW_CAMPAIGN: 'c1',
      FATHOM_SHADOW_PRIMARY: 'http://127.0.0.1:1',
      FATHOM_SHADOW_ADMIN_LISTEN: 'localhost',
    });
    expect(badAdmin.code).toBe(2);
    expect(badAdmin.stderr).toContain("--admin-listen wants host:port, got 'localhost'");
    const badDrain = await run(['--listen', '127.0.0.1:0', '--drain-ms', '5s'], {
      FATHOM_SHADOW_CAMPAIGN: 'c1',
      FATHOM_SHADOW_PRIMARY: 'http://127.0.0.1:1',
    });
    expect(badDrain.code).toBe(2);
    expect(badDrain.stderr).toContain("--drain-ms wants whole milliseconds 0..600000, got '5s'");
    const badConnections = await run(['--listen', '127.0.0.1:0', '--primary-connections', '0'], {
      FATHOM_SHADOW_CAMPAIGN: 'c1',
      FATHOM_SHADOW_PRIMARY: 'http://127.0.0.1:1',
    });
    expect(badConnections.code).toBe(2);
    expect(badConnections.stderr).toContain("--primary-connections wants a whole number 1..65536, got '0'");
    const badBody = await run(['--listen', '127.0.0.1:0'], {
      FATHOM_SHADOW_CAMPAIGN: 'c1',
      FATHOM_SHADOW_PRIMARY: 'http://127.0.0.1:1',
      FATHOM_SHADOW_MAX_BUFFERED_BODY: '1MB',
    });
    expect(badBody.code).toBe(2);
    expect(badBody.stderr).toContain("--max-buffered-body wants a whole number 1024..1073741824, got '1MB'");
  });

  (process.platform === 'linux' ? it : it.skip)(
    'forwards from a child node without the memory reducer, which ends with its parent',
    async () => {
      const primary = await serve(200, ANSWER);
      const orchestrator = await serve(202, '{"accepted":true}');
      const parent = spawn(
        process.execPath,
        [
          BIN,
          ...['shadow', 'gateway', '--listen', '127.0.0.1:0', '--campaign', 'c-child'],
          ...['--primary', primary.url, '--api', orchestrator.url],
        ],
        { env: { ...process.env, MALLOC_ARENA_MAX: undefined } },
      );
      let child = 0;
      try {
        let stdout = '';
        parent.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
        const url = await waitFor(() => /gateway on (http:\/\/\S+)/.exec(stdout)?.[1], {
          timeoutMs: 30_000,
          description: 'the gateway to listen',
        });
        [child] = childrenOf(parent.pid!);
        expect(readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0')).toContain('--no-memory-reducer');
        expect(environOf(child)).toContain('MALLOC_ARENA_MAX=2');
        const answer = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"model":"m","messages":[]}',
        });
        expect(await answer.text()).toBe(ANSWER);

        // Killed outright, the parent forwards nothing: the child notices and closes by itself.
        parent.kill('SIGKILL');
        await waitFor(() => [null, 'Z'].includes(processState(child)), {
          timeoutMs: 15_000,
          description: 'the gateway child to end with its parent',
        });
      } finally {
        parent.kill('SIGKILL');
        if (child && processState(child) !== null) process.kill(child, 'SIGKILL');
        await primary.close();
        await orchestrator.close();
      }
    },
  );
});
