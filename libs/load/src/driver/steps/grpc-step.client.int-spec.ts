import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrpcStepSchema, type GrpcStep } from '@fathom/contracts';
import { RequestTimeout } from '../request-outcome';
import { GrpcStepClient } from './grpc-step.client';
import { stepTestRequest } from './step-test.util';

const PROTO = `syntax = "proto3";
package fathom.echo;
message Ask { string text = 1; int32 count = 2; }
message Say { string text = 1; int32 index = 2; }
service Echo {
  rpc Once (Ask) returns (Say);
  rpc Many (Ask) returns (stream Say);
  rpc Upload (stream Ask) returns (Say);
}`;

/** A loopback Echo server: `text` picks the behaviour (ok, fail, hang, garbage, cut). */
async function echoServer() {
  const dir = mkdtempSync(join(tmpdir(), 'fathom-grpc-test-'));
  writeFileSync(join(dir, 'echo.proto'), PROTO);
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(join(dir, 'echo.proto')));
  const service = (pkg.fathom as grpc.GrpcObject).echo as grpc.GrpcObject;
  const Echo = service.Echo as grpc.ServiceClientConstructor;
  const server = new grpc.Server();
  const seen: grpc.Metadata[] = [];
  server.addService(Echo.service, {
    Once: (call: grpc.ServerUnaryCall<{ text: string }, unknown>, done: grpc.sendUnaryData<unknown>) => {
      seen.push(call.metadata);
      const text = call.request.text;
      if (text === 'fail') done({ code: grpc.status.NOT_FOUND, details: 'no such thing' });
      else if (text === 'hang') return;
      else done(null, { text: `echo ${text}`, index: 0 });
    },
    Many: (call: grpc.ServerWritableStream<{ text: string; count: number }, unknown>) => {
      let i = 0;
      const timer = setInterval(() => {
        if (call.request.text === 'cut' && i === 2) {
          clearInterval(timer);
          call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'backend gone' });
          return;
        }
        call.write({ text: call.request.text, index: i++ });
        if (i >= call.request.count) {
          clearInterval(timer);
          call.end();
        }
      }, 5);
      call.on('cancelled', () => clearInterval(timer));
    },
    Upload: () => undefined,
  });
  // The same path answered with bytes that are no Say message.
  server.addService(
    {
      Garbage: {
        path: '/fathom.echo.Broken/Once',
        requestStream: false,
        responseStream: false,
        requestSerialize: (v: Buffer) => v,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: () => Buffer.from([0x0f, 0xff, 0xff, 0xff]),
        responseDeserialize: (b: Buffer) => b,
      },
    },
    { Garbage: (_c: unknown, done: grpc.sendUnaryData<Buffer>) => done(null, Buffer.alloc(0)) },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return { port, dir, seen, close: () => server.forceShutdown() };
}

const step = (overrides: Record<string, unknown>): GrpcStep =>
  GrpcStepSchema.parse({
    kind: 'grpc',
    name: 's',
    proto: { text: PROTO },
    service: 'fathom.echo.Echo',
    method: 'Once',
    ...overrides,
  });

async function callOnce(sut: GrpcStepClient, cancelAfterMs?: number) {
  const request = stepTestRequest();
  if (cancelAfterMs !== undefined)
    setTimeout(() => request.cancel.abort(new RequestTimeout(cancelAfterMs)), cancelAfterMs);
  return sut.call({ request, toolCalls: [] }, performance.now());
}

describe(GrpcStepClient.name, () => {
  let server: Awaited<ReturnType<typeof echoServer>>;
  beforeAll(async () => (server = await echoServer()));
  afterAll(() => server.close());

  const client = async (overrides: Record<string, unknown>) => {
    const sut = new GrpcStepClient(
      step({ address: `127.0.0.1:${server.port}`, ...overrides }),
      'http://unused:1',
    );
    await sut.prepare();
    return sut;
  };

  it('calls a unary method from inline proto text with metadata; the body is the response as JSON', async () => {
    const sut = await client({ request: { text: 'hi' }, headers: { 'x-tenant': 't1' } });
    const answer = await callOnce(sut);
    await sut.close();
    expect(answer).toMatchObject({ status: 0, httpStatus: 200, messages: 1, statusClass: null });
    expect(answer.failure).toBeUndefined();
    expect(JSON.parse(answer.body)).toEqual({ text: 'echo hi', index: 0 });
    expect(answer.firstMessageMs).toBeGreaterThan(0);
    expect(server.seen.at(-1)?.get('x-tenant')).toEqual(['t1']);
    expect(server.seen.at(-1)?.get('x-fathom-run')).toEqual(['run-1']);
  });

  it('times every message of a server stream, the first as the first-message time', async () => {
    const sut = await client({
      method: 'Many',
      request: { text: 'x', count: 4 },
      proto: { path: join(server.dir, 'echo.proto') },
    });
    const answer = await callOnce(sut);
    await sut.close();
    expect(answer.status).toBe(0);
    expect(answer.messages).toBe(4);
    expect(answer.messageOffsetsMs).toHaveLength(4);
    expect(answer.firstMessageMs).toBe(answer.messageOffsetsMs[0]);
    expect([...answer.messageOffsetsMs].sort((a, b) => a - b)).toEqual(answer.messageOffsetsMs);
    expect(JSON.parse(answer.body).map((m: { index: number }) => m.index)).toEqual([0, 1, 2, 3]);
  });

  it('gives a non-OK code as the status, classed as its HTTP mapping', async () => {
    const sut = await client({ request: { text: 'fail' } });
    const answer = await callOnce(sut);
    await sut.close();
    expect(answer).toMatchObject({ status: grpc.status.NOT_FOUND, statusClass: 'http-4xx' });
    expect(answer.statusText).toContain('NOT_FOUND: no such thing');
  });

  it('classes a hang our timeout cut as timeout, a refused connection as connect', async () => {
    const hang = await client({ request: { text: 'hang' } });
    expect((await callOnce(hang, 100)).failure?.errorClass).toBe('timeout');
    await hang.close();
    const closed = await echoServer();
    closed.close();
    const refused = new GrpcStepClient(step({ address: `127.0.0.1:${closed.port}` }), 'http://unused:1');
    await refused.prepare();
    expect((await callOnce(refused, 5000)).failure?.errorClass).toBe('connect');
    await refused.close();
  });

  it('classes an answer that does not decode as protocol, a stream cut short as stream-truncated', async () => {
    const garbage = await client({
      service: 'fathom.echo.Broken',
      proto: { text: PROTO.replace('service Echo', 'service Broken') },
    });
    const answer = await callOnce(garbage);
    await garbage.close();
    expect(answer.failure?.errorClass).toBe('protocol');
    const cut = await client({ method: 'Many', request: { text: 'cut', count: 10 } });
    const truncated = await callOnce(cut);
    await cut.close();
    expect(truncated.messages).toBe(2);
    expect(truncated.failure).toEqual({
      errorClass: 'stream-truncated',
      message: 'gRPC UNAVAILABLE: backend gone',
    });
  });

  it('refuses an unknown method, a client-streaming one and a request the message refuses before any load', async () => {
    await expect(client({ method: 'Nope' })).rejects.toThrow(
      /has no method Nope \(it has Once, Many, Upload\)/,
    );
    await expect(client({ method: 'Upload' })).rejects.toThrow(/streams its requests/);
    await expect(client({ service: 'fathom.echo.Missing' })).rejects.toThrow(
      /no service fathom.echo.Missing/,
    );
    await expect(client({ request: { count: 'many' } })).rejects.toThrow(
      /request does not fit \/fathom.echo.Echo\/Once: \$.count is a number field, given "many"/,
    );
    await expect(client({ request: { nope: 1 } })).rejects.toThrow(/\$.nope is no field of the message/);
    await expect(client({ proto: { text: 'syntax = "proto3"; message {' } })).rejects.toThrow(
      /inline proto does not load/,
    );
  });
});
