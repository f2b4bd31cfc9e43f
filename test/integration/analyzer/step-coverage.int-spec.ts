import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import type { RunReportDocument } from '@fathom/analysis';
import { RunReportRepository } from '@fathom/storage';
import { startEmbedded, waitForRun, type EmbeddedFathom } from '@fathom/runtime';

const PROTO = `syntax = "proto3";
package fathom.tokens;
message Prompt { string text = 1; }
message Token { string text = 1; bool done = 2; }
service Generator { rpc Stream (Prompt) returns (stream Token); }`;

/**
 * Per-assertion counts and per-step figures of a steps run over gRPC and WebSocket travel from
 * the load-generator (its worker thread) over the bus to the analyzer, and from there into the
 * stored summary and report: nothing on the way strips them.
 */
describe('analyzer: assertion coverage of a steps run over gRPC and WebSocket', () => {
  jest.setTimeout(90_000);
  let sut: EmbeddedFathom;
  const closers: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    process.env.FATHOM_SEMANTIC_EMBEDDER = 'off';
    process.env.FATHOM_ANALYZER_SETTLE_MS = '500';
    sut = await startEmbedded({ dataDir: null, logLevels: ['error'] });
  });

  afterAll(async () => {
    await sut?.close();
    for (const close of closers) await close();
    delete process.env.FATHOM_SEMANTIC_EMBEDDER;
    delete process.env.FATHOM_ANALYZER_SETTLE_MS;
  });

  it('keeps each assertion and step to the summary and the report', async () => {
    const http = createServer((_req, res) => res.writeHead(404).end());
    const wss = new WebSocketServer({ server: http, path: '/ws' });
    wss.on('connection', (ws) => ws.on('message', () => ws.send('{"status":"success"}')));
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    closers.push(() => {
      for (const c of wss.clients) c.terminate();
      http.closeAllConnections();
      return new Promise<void>((r) => http.close(() => r()));
    });
    const dir = mkdtempSync(join(tmpdir(), 'fathom-coverage-'));
    writeFileSync(join(dir, 'tokens.proto'), PROTO);
    const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(join(dir, 'tokens.proto')));
    const server = new grpc.Server();
    server.addService(
      (((pkg.fathom as grpc.GrpcObject).tokens as grpc.GrpcObject).Generator as grpc.ServiceClientConstructor)
        .service,
      {
        Stream: (call: grpc.ServerWritableStream<unknown, unknown>) => {
          call.write({ text: 'a' });
          call.write({ text: 'b', done: true });
          call.end();
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    closers.push(() => server.forceShutdown());

    const { runId } = await sut.campaigns.submit(
      {
        name: 'coverage',
        target: { baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}` },
        scenario: {
          type: 'http',
          assertions: [{ kind: 'body-contains', name: 'success', text: 'success' }],
          steps: [
            {
              kind: 'grpc',
              name: 'generate',
              address: `127.0.0.1:${port}`,
              proto: { text: PROTO },
              service: 'fathom.tokens.Generator',
              method: 'Stream',
              request: { text: 'hi' },
              budgetMs: 10_000,
              assertions: [
                { kind: 'status', name: 'ok', equals: 0 },
                { kind: 'jsonpath', name: 'two-tokens', path: '$[1].done', equals: true },
              ],
            },
            {
              kind: 'websocket',
              name: 'chat',
              dependsOn: ['generate'],
              url: '/ws',
              send: ['hi'],
              until: { frames: 1 },
              concurrency: 1,
              assertions: ['success', { kind: 'regex', name: 'polite', pattern: 'please' }],
            },
            {
              kind: 'websocket',
              name: 'after',
              dependsOn: ['chat'],
              url: '/ws',
              until: { frames: 1 },
              assertions: ['success'],
            },
          ],
        },
        load: { concurrency: 2, durationMs: 1500 },
        reruns: { maxReruns: 0, cooldownMs: 0 },
      } as never,
      'api',
    );
    const run = await waitForRun(sut.runs, runId, { timeoutMs: 60_000 });
    const summary = run.summary!;
    expect(summary.requests).toBeGreaterThan(0);
    const n = summary.requests;
    const states = Object.fromEntries(
      summary.assertions!.byName.map((a) => [a.name, [a.state, a.passes, a.failures]]),
    );
    expect(states).toEqual({
      'generate.ok': ['passed', n, 0],
      'generate.two-tokens': ['passed', n, 0],
      'chat.success': ['passed', n, 0],
      'chat.polite': ['failed', 0, n],
      'after.success': ['never-ran', 0, 0],
    });
    expect(summary.assertions).toMatchObject({ declared: 5, ran: 4, passed: 3, failed: 1, neverRan: 1 });
    const steps = Object.fromEntries(summary.steps!.map((s) => [s.name, s]));
    expect(steps.generate).toMatchObject({ kind: 'grpc', runs: n, failed: 0, slaMisses: 0, messages: 2 * n });
    expect(steps.chat).toMatchObject({ kind: 'websocket', runs: n, failed: n, concurrency: 1 });
    expect(steps.after).toMatchObject({ runs: 0, skipped: n });
    expect(summary.errorClasses).toEqual({ other: n });

    const stored = await sut.fathom.app.get(RunReportRepository).latest(runId);
    const document = stored!.document as unknown as RunReportDocument;
    expect(document.summary.assertions?.neverRan).toBe(1);
    expect(document.summary.steps).toHaveLength(3);
  });
});
