import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliExit } from '../cli-exit';
import { loadReport } from './report-source';

const DOC = { runId: 'r1', summary: { requests: 3 }, tiers: { final: 'SLO-0', changes: [] }, objectives: {} };

describe(loadReport.name, () => {
  let server: Server;
  let api: string;
  let dir: string;
  const auth: (string | undefined)[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      auth.push(req.headers.authorization);
      if (req.url === '/v1/runs/r1/report') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ runId: 'r1', version: 1, document: DOC, createdAt: 0 }));
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    dir = await mkdtemp(join(tmpdir(), 'fathom-report-source-'));
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a run id through --api, with the bearer token', async () => {
    await expect(loadReport('r1', { api, token: 't0k' })).resolves.toEqual(DOC);
    expect(auth[auth.length - 1]).toBe('Bearer t0k');
  });

  it('says when the API has no report for the run (exit 2)', async () => {
    await expect(loadReport('r2', { api })).rejects.toMatchObject({
      code: 2,
      message: expect.stringContaining('run r2: no report at'),
    });
  });

  it('reads a file holding the document or the API answer, and refuses any other JSON', async () => {
    const bare = join(dir, 'bare.json');
    const wrapped = join(dir, 'wrapped.json');
    const other = join(dir, 'other.json');
    await writeFile(bare, JSON.stringify(DOC));
    await writeFile(wrapped, JSON.stringify({ version: 2, document: DOC }));
    await writeFile(other, '[1, 2]');
    await expect(loadReport(bare, {})).resolves.toEqual(DOC);
    await expect(loadReport(wrapped, {})).resolves.toEqual(DOC);
    await expect(loadReport(other, {})).rejects.toBeInstanceOf(CliExit);
  });
});
