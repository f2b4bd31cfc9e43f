import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { headerTexts, stepRoute, type ErrorClass, type GrpcStep } from '@fathom/contracts';
import { classifyError, errorText } from '../error-class.util';
import { failedAnswer, type StepAnswer, type StepCallContext, type StepClient } from './step-client';

/** Responses kept for assertions up to this many characters of JSON (later stream messages are counted, not kept). */
const STEP_BODY_CAP = 1024 * 1024;

/** Proto fields as written, 64-bit integers and enums as strings, bytes base64: JSON that assertions can read. */
const LOAD_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  bytes: String,
  defaults: true,
  oneofs: true,
};

/** gRPC codes that are the caller's fault (grpc-gateway maps them to 4xx); the others map to 5xx. */
const CLIENT_CODES = new Set<grpc.status>([
  grpc.status.CANCELLED,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.NOT_FOUND,
  grpc.status.ALREADY_EXISTS,
  grpc.status.PERMISSION_DENIED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.ABORTED,
  grpc.status.OUT_OF_RANGE,
  grpc.status.UNAUTHENTICATED,
]);

/** The class a non-OK code earns unless a status assertion expects it: its HTTP mapping, timeouts apart. */
export function grpcStatusClass(code: grpc.status): ErrorClass | null {
  if (code === grpc.status.OK) return null;
  if (code === grpc.status.DEADLINE_EXCEEDED) return 'timeout';
  return CLIENT_CODES.has(code) ? 'http-4xx' : 'http-5xx';
}

type LoadedMethod = protoLoader.MethodDefinition<object, object>;

/**
 * One gRPC step: a unary or server-streaming call on a channel of its own (HTTP/2 multiplexes
 * the shard's concurrent runs). The proto is loaded in `prepare`; an unknown service or method, a
 * streaming request, or a request the message type refuses fail the shard before any load.
 * Classes: no server headers and UNAVAILABLE: `connect`; UNAVAILABLE after stream messages:
 * `stream-truncated`; an answer that does not decode: `protocol`; our timeout: `timeout`; any
 * other non-OK code: `grpcStatusClass` (a status assertion may expect it instead).
 */
export class GrpcStepClient implements StepClient {
  readonly route: string;
  private method: LoadedMethod | null = null;
  private client: grpc.Client | null = null;
  private readonly address: string;

  constructor(
    private readonly step: GrpcStep,
    baseUrl: string,
  ) {
    this.route = stepRoute(step);
    this.address = step.address ?? new URL(baseUrl).host;
  }

  async prepare(): Promise<void> {
    const definition = await loadProto(this.step.proto);
    const service = definition[this.step.service] as grpc.ServiceDefinition | undefined;
    if (service === undefined || typeof service !== 'object' || 'format' in service)
      throw new Error(`step ${this.step.name}: the proto defines no service ${this.step.service}`);
    const method = (service as unknown as Record<string, LoadedMethod | undefined>)[this.step.method];
    if (method === undefined)
      throw new Error(
        `step ${this.step.name}: service ${this.step.service} has no method ${this.step.method} (it has ${Object.keys(service).join(', ')})`,
      );
    if (method.requestStream)
      throw new Error(
        `step ${this.step.name}: ${this.route} streams its requests; gRPC steps are unary or server streaming`,
      );
    let problem: string | null;
    try {
      problem = requestMismatch(
        this.step.request,
        method.requestDeserialize(method.requestSerialize(this.step.request)),
        '$',
      );
    } catch (error) {
      problem = errorText(error);
    }
    if (problem !== null)
      throw new Error(`step ${this.step.name}: the request does not fit ${this.route}: ${problem}`);
    this.method = method;
    this.client = new grpc.Client(
      this.address,
      this.step.tls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure(),
    );
  }

  call({ request }: StepCallContext, startedMono: number): Promise<StepAnswer> {
    const method = this.method;
    const client = this.client;
    if (method === null || client === null)
      return Promise.resolve(failedAnswer('other', `step ${this.step.name}: proto not loaded`));
    if (request.cancel.aborted)
      return Promise.resolve(
        failedAnswer(
          classifyError(request.cancel.reason, request.cancel, false),
          errorText(request.cancel.reason),
        ),
      );
    const metadata = new grpc.Metadata();
    for (const [key, value] of Object.entries({ ...headerTexts(this.step.headers), ...request.headers }))
      metadata.set(key.toLowerCase(), value);
    return new Promise<StepAnswer>((resolve) => {
      const offsets: number[] = [];
      const kept: unknown[] = [];
      let keptChars = 0;
      let headers = false;
      let settled = false;
      const settle = (status: grpc.StatusObject | null, error?: unknown) => {
        if (settled) return;
        settled = true;
        const firstMessageMs = offsets[0] ?? null;
        const received = {
          httpStatus: headers ? 200 : 0,
          firstMessageMs,
          messageOffsetsMs: method.responseStream ? offsets : [],
          messages: offsets.length,
        };
        if (request.cancel.aborted || status === null) {
          resolve({
            ...failedAnswer(classifyError(error, request.cancel, headers), errorText(error ?? 'call ended')),
            ...received,
          });
          return;
        }
        const code = status.code;
        const failure = transportFailure(code, status.details, headers, offsets.length);
        if (failure) {
          resolve({ ...failedAnswer(failure, `gRPC ${grpc.status[code]}: ${status.details}`), ...received });
          return;
        }
        const statusClass = grpcStatusClass(code);
        resolve({
          status: code,
          ...received,
          body: JSON.stringify(method.responseStream ? kept : (kept[0] ?? null)),
          statusClass,
          ...(statusClass
            ? { statusText: `gRPC ${grpc.status[code]}: ${status.details.slice(0, 200)}` }
            : {}),
        });
      };
      const onMessage = (message: unknown) => {
        offsets.push(performance.now() - startedMono);
        const chars = JSON.stringify(message)?.length ?? 0;
        if (keptChars + chars <= STEP_BODY_CAP) {
          kept.push(message);
          keptChars += chars;
        }
      };
      const serialize = method.requestSerialize as (value: object) => Buffer;
      const deserialize = method.responseDeserialize as (bytes: Buffer) => unknown;
      let call: grpc.ClientUnaryCall | grpc.ClientReadableStream<unknown>;
      try {
        if (method.responseStream) {
          const stream = client.makeServerStreamRequest(
            method.path,
            serialize,
            deserialize,
            this.step.request,
            metadata,
          );
          stream.on('data', onMessage);
          // A non-OK status is also an 'error' event: the status event below says it all.
          stream.on('error', () => undefined);
          stream.on('status', (status: grpc.StatusObject) => settle(status));
          call = stream;
        } else {
          // grpc-js calls back before it emits the status: the message is in when the status settles.
          const unary = client.makeUnaryRequest(
            method.path,
            serialize,
            deserialize,
            this.step.request,
            metadata,
            (error, response) => {
              if (error === null) onMessage(response);
            },
          );
          unary.on('status', (status: grpc.StatusObject) => settle(status));
          call = unary;
        }
        call.on('metadata', () => (headers = true));
      } catch (error) {
        settle(null, error);
        return;
      }
      request.cancel.signal().addEventListener('abort', () => {
        call.cancel();
        settle(null, request.cancel.reason);
      });
    });
  }

  close(): Promise<void> {
    this.client?.close();
    return Promise.resolve();
  }
}

function transportFailure(
  code: grpc.status,
  details: string,
  headers: boolean,
  messages: number,
): ErrorClass | null {
  if (code === grpc.status.UNAVAILABLE && !headers) return 'connect';
  if (code === grpc.status.UNAVAILABLE && messages > 0) return 'stream-truncated';
  // grpc-js's own words when a message does not decode as the method's response type.
  if (code === grpc.status.INTERNAL && /message parsing error/i.test(details)) return 'protocol';
  return null;
}

/**
 * Where a request lost something on its way through the message type (protobufjs coerces rather
 * than refuses): a field the type does not have, or text where it wants a number. Null: it fits.
 */
function requestMismatch(sent: unknown, decoded: unknown, path: string): string | null {
  if (Array.isArray(sent)) {
    if (!Array.isArray(decoded)) return `${path} is not a repeated field`;
    for (let i = 0; i < sent.length; i++) {
      const problem = requestMismatch(sent[i], decoded[i], `${path}[${i}]`);
      if (problem !== null) return problem;
    }
    return null;
  }
  if (sent !== null && typeof sent === 'object') {
    if (decoded === null || typeof decoded !== 'object') return `${path} is not a message field`;
    for (const [key, value] of Object.entries(sent)) {
      if (!(key in decoded)) return `${path}.${key} is no field of the message`;
      const problem = requestMismatch(value, (decoded as Record<string, unknown>)[key], `${path}.${key}`);
      if (problem !== null) return problem;
    }
    return null;
  }
  if (typeof sent === 'string' && typeof decoded === 'number' && Number(sent) !== decoded)
    return `${path} is a number field, given ${JSON.stringify(sent)}`;
  return null;
}

/** Loads a proto from its path, or its inline text through a private temporary file (imports: none beside it). */
async function loadProto(proto: GrpcStep['proto']): Promise<protoLoader.PackageDefinition> {
  if ('path' in proto) {
    try {
      return await protoLoader.load(proto.path, LOAD_OPTIONS);
    } catch (error) {
      throw new Error(`proto ${proto.path} does not load: ${errorText(error)}`);
    }
  }
  const dir = await mkdtemp(join(tmpdir(), 'fathom-proto-'));
  try {
    const file = join(dir, 'inline.proto');
    await writeFile(file, proto.text, { mode: 0o600 });
    return await protoLoader.load(file, LOAD_OPTIONS);
  } catch (error) {
    throw new Error(`the inline proto does not load: ${errorText(error)}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
