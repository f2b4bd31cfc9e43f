import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import { CampaignSpecSchema } from '@fathom/contracts';
import { runShard } from '../../engine/run-shard';
import type { DriverOutcome } from '../request-outcome';

const PROTO = `syntax = "proto3";
package fathom.tokens;
message Prompt { string text = 1; }
message Token { string text = 1; bool done = 2; }
service Generator { rpc Stream (Prompt) returns (stream Token); }`;

/**
 * One loopback origin for all three protocols: HTTP `/login` and the WebSocket `/ws` on one HTTP
 * server, the gRPC Generator on its own port; the gRPC handler counts the calls in flight at once.
 */
async function targets() {
  const http = createServer((req, res) => {
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: 'success', token: 'abc' }));
  });
  const wss = new WebSocketServer({ server: http, path: '/ws' });
  wss.on('connection', (ws) =>
    ws.on('message', () => {
      // 30 ms to answer: over the step's 5 ms budget every time.
      setTimeout(() => ws.send(JSON.stringify({ status: 'success', done: true })), 30);
    }),
  );
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const dir = mkdtempSync(join(tmpdir(), 'fathom-dag-'));
  writeFileSync(join(dir, 'tokens.proto'), PROTO);
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(join(dir, 'tokens.proto')));
  const Generator = (pkg.fathom as grpc.GrpcObject).tokens as grpc.GrpcObject;
  const server = new grpc.Server();
  const inFlight = { now: 0, max: 0 };
  server.addService((Generator.Generator as grpc.ServiceClientConstructor).service, {
    Stream: (call: grpc.ServerWritableStream<{ text: string }, unknown>) => {
      inFlight.max = Math.max(inFlight.max, ++inFlight.now);
      let i = 0;
      const timer = setInterval(() => {
        call.write({ text: `t${i}`, done: i === 2 });
        if (++i === 3) {
          clearInterval(timer);
          inFlight.now--;
          call.end();
        }
      }, 15);
    },
  });
  const grpcPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return {
    baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    grpcAddress: `127.0.0.1:${grpcPort}`,
    inFlight,
    close: async () => {
      server.forceShutdown();
      for (const c of wss.clients) c.terminate();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}

describe('a step DAG over HTTP, gRPC and WebSocket', () => {
  it('applies named reusable assertions to every kind, holds a step to its concurrency and counts its budget misses', async () => {
    const t = await targets();
    const outcomes: DriverOutcome[] = [];
    try {
      const sut = await runShard({
        spec: CampaignSpecSchema.parse({
          name: 'protocols',
          target: { baseUrl: t.baseUrl },
          scenario: {
            type: 'http',
            assertions: [
              { kind: 'body-contains', name: 'says-success', text: 'success' },
              { kind: 'first-message', name: 'first-fast', belowMs: 5000 },
              { kind: 'jsonpath', name: 'last-done', path: '$[2].done', equals: true },
            ],
            steps: [
              {
                name: 'login',
                method: 'POST',
                path: '/login',
                body: {},
                assertions: ['says-success', 'first-fast'],
              },
              {
                kind: 'grpc',
                name: 'generate',
                dependsOn: ['login'],
                address: t.grpcAddress,
                proto: { text: PROTO },
                service: 'fathom.tokens.Generator',
                method: 'Stream',
                request: { text: 'hello' },
                concurrency: 1,
                assertions: ['first-fast', 'last-done', { kind: 'status', name: 'ok', equals: 0 }],
              },
              {
                kind: 'websocket',
                name: 'chat',
                dependsOn: ['login'],
                url: '/ws',
                send: [{ prompt: 'hi' }],
                until: { path: '$.done', equals: true },
                budgetMs: 5,
                assertions: ['says-success', 'first-fast'],
              },
              // Never runs: its dependency's assertion always fails.
              { name: 'after', path: '/login', dependsOn: ['strict'], assertions: ['says-success'] },
              {
                name: 'strict',
                path: '/login',
                assertions: [{ kind: 'jsonpath', name: 'has-user', path: '$.user', exists: true }],
              },
            ],
          },
          load: { concurrency: 4, durationMs: 1500 },
        }),
        shard: { index: 0, count: 1 },
        runId: 'r',
        campaignId: 'c',
        generatorId: 'g',
        sink: { record: () => undefined, window: () => undefined },
        signal: new AbortController().signal,
        tap: (_id, outcome) => outcomes.push(outcome),
      });
      // Few iterations on a loaded machine; every one must show the same.
      const n = sut.sent;
      expect(n).toBeGreaterThan(0);
      for (const name of [
        'login.says-success',
        'login.first-fast',
        'generate.first-fast',
        'generate.last-done',
        'generate.ok',
        'chat.says-success',
        'chat.first-fast',
      ])
        expect([name, sut.assertions[name]]).toEqual([name, { passed: n, failed: 0 }]);
      expect(sut.assertions['strict.has-user']).toEqual({ passed: 0, failed: n });
      expect(sut.assertions['after.says-success']).toBeUndefined();
      expect(t.inFlight.max).toBe(1);
      expect(sut.steps.generate).toMatchObject({
        runs: n,
        failed: 0,
        skipped: 0,
        slaMisses: 0,
        messages: 3 * n,
      });
      expect(sut.steps.chat).toMatchObject({ runs: n, slaMisses: n, firstMessages: n });
      expect(sut.steps.after).toMatchObject({ runs: 0, skipped: n });
      expect(sut.steps.chat.latencyMsSum / n).toBeGreaterThan(25);
      // The iteration's TTFT is the first streamed message (gRPC token or WebSocket frame).
      expect(outcomes[0].ttftMs).toBeGreaterThan(0);
      expect(outcomes[0].chunkOffsetsMs).toHaveLength(4);
      expect(outcomes[0].errorMessage).toBe('step strict: assertion has-user failed');
    } finally {
      await t.close();
    }
  });

  it('fails the shard before any load when the proto names no such method', async () => {
    const t = await targets();
    try {
      await expect(
        runShard({
          spec: CampaignSpecSchema.parse({
            name: 'bad proto',
            target: { baseUrl: t.baseUrl },
            scenario: {
              type: 'http',
              steps: [
                {
                  kind: 'grpc',
                  name: 'generate',
                  address: t.grpcAddress,
                  proto: { text: PROTO },
                  service: 'fathom.tokens.Generator',
                  method: 'Complete',
                },
              ],
            },
            load: { concurrency: 1, durationMs: 300 },
          }),
          shard: { index: 0, count: 1 },
          runId: 'r',
          campaignId: 'c',
          generatorId: 'g',
          sink: { record: () => undefined, window: () => undefined },
          signal: new AbortController().signal,
        }),
      ).rejects.toThrow(
        'step generate: service fathom.tokens.Generator has no method Complete (it has Stream)',
      );
    } finally {
      await t.close();
    }
  });
});
