import type { Dispatcher, Pool } from 'undici';
import type { ChatScenario, ErrorClass } from '@fathom/contracts';
import {
  ChatStreamAssembler,
  CompletionBodyTemplate,
  SseDecoder,
  type ParsedChatStream,
} from '@fathom/semantic';
import { countOutputTokens } from './output-token-count.util';
import {
  retryAfterField,
  type DriverOutcome,
  type DriverRequest,
  type RequestDriver,
} from './request-outcome';
import { classifyError, errorText, httpErrorClass, noEventStreamMessage } from './error-class.util';
import { targetPath } from './target-url.util';
import { Utf8BodyText } from './utf8-body.util';
import type { MediaPart } from '../dataset/prompt-item';
import { Http1Client, type Http1Connection, type Http1Exchange } from '../transport/http1.client';
import { postTransport } from '../transport/post.transport';

export interface HttpTarget {
  baseUrl: string;
  apiKey?: string;
}

export interface DriverOptions {
  /** Connections kept to the target: the shard's cap on requests in flight. */
  connections: number;
  /** Response text kept per record (records stay small). */
  contentCapChars: number;
  /** Client-side output token count (the scenario's tokenizer); gpt-tokenizer's o200k_base when absent. */
  countTokens?: (text: string) => number;
}

/** A chat content part as the Responses API names it. */
function responsesPart(part: MediaPart): Record<string, unknown> {
  return part.type === 'image_url'
    ? { type: 'input_image', image_url: part.image_url.url }
    : { type: 'input_audio', input_audio: part.input_audio };
}

/** Error bodies are kept up to this size for the record's errorMessage. */
const ERROR_BODY_CAP = 2048;
/**
 * A response's most body bytes: a chat answer is kilobytes (a long one with logprobs a few
 * MB). A target answering without end was held whole until the request's timeout: 2.7-3.3 GB
 * of RSS for 4 requests in 10 s. Past this the request ends, class `protocol`.
 */
export const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/**
 * OpenAI-compatible chat/completions and legacy completions, streaming or not. Timing contract:
 * every content-bearing SSE payload gets the performance.now() of the socket read that carried
 * it, minus the moment the request was written to the socket (waiting for a pooled connection
 * and connecting are client time, reported as `sendDelayMs`); TTFT is the first such offset
 * (vLLM/GuideLLM: first chunk with content), the inter-token latencies are the gaps between
 * consecutive offsets.
 *
 * Transport: `http:` targets go through Fathom's own HTTP/1.1 client (libs/load/src/transport:
 * one pre-serialised request head, one socket write, a minimal response parser; undici and
 * Node's stream layer were ~60 % of the client's busy CPU, bench/RESULTS.md). `https:` targets
 * keep undici: the own client speaks plain TCP only, and TLS costs dwarf the parsing there.
 */
export class OpenAiChatDriver implements RequestDriver {
  /** Stream bytes of the own client's reads, parsed after the reads (see StreamBacklog). */
  readonly backlog = new StreamBacklog();
  private readonly pool: Pool | null;
  private readonly http1: Http1Client | null;
  private readonly origin: string;
  private readonly path: string;
  /** Flat [name, value, ...] list: undici takes it without re-walking an object per request. */
  private readonly staticHeaders: string[];
  /**
   * Request bodies per dataset item: the same item always sends the same JSON. For the own
   * client the cached text is the request's tail (`content-length`, blank line, body).
   */
  private readonly bodies = new WeakMap<DriverRequest['item'], string>();
  /** Non-streamed bodies of this target share one template (null when streaming). */
  readonly bodyTemplate: CompletionBodyTemplate | null;

  constructor(
    private readonly scenario: ChatScenario,
    target: HttpTarget,
    private readonly options: DriverOptions,
  ) {
    const { origin, path } = targetPath(
      target.baseUrl,
      scenario.endpoint === 'chat'
        ? '/chat/completions'
        : scenario.endpoint === 'responses'
          ? '/responses'
          : '/completions',
    );
    this.origin = origin;
    this.path = path;
    this.bodyTemplate = scenario.stream ? null : new CompletionBodyTemplate();
    this.staticHeaders = [
      'content-type',
      'application/json',
      'accept',
      scenario.stream ? 'text/event-stream' : 'application/json',
      ...(target.apiKey ? ['authorization', `Bearer ${target.apiKey}`] : []),
    ];
    const headers: Record<string, string> = {};
    for (let i = 0; i < this.staticHeaders.length; i += 2)
      headers[this.staticHeaders[i]] = this.staticHeaders[i + 1];
    ({ http1: this.http1, pool: this.pool } = postTransport({
      origin,
      path,
      headers,
      connections: options.connections,
    }));
  }

  private body(request: DriverRequest): string {
    let body = this.bodies.get(request.item);
    if (body === undefined) {
      body = this.renderBody(request);
      if (this.http1 !== null) body = Http1Client.bodyTail(body);
      this.bodies.set(request.item, body);
    }
    return body;
  }

  private renderBody(request: DriverRequest): string {
    const s = this.scenario;
    const maxTokens = request.item.maxTokens ?? s.maxTokens;
    const common = {
      model: s.model,
      max_tokens: maxTokens,
      stream: s.stream,
      ...(s.stream ? { stream_options: { include_usage: true } } : {}),
      ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    };
    if (s.endpoint === 'responses')
      return JSON.stringify({
        model: s.model,
        input: request.item.messages.map((m) =>
          m.parts
            ? {
                role: m.role,
                content: [{ type: 'input_text', text: m.content }, ...m.parts.map(responsesPart)],
              }
            : m,
        ),
        max_output_tokens: maxTokens,
        stream: s.stream,
        ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
      });
    if (s.endpoint === 'chat')
      return JSON.stringify({
        ...common,
        // Multimodal parts go after the text part, as given (OpenAI content parts).
        messages: request.item.messages.map((m) =>
          m.parts ? { role: m.role, content: [{ type: 'text', text: m.content }, ...m.parts] } : m,
        ),
        ...(s.logprobs ? { logprobs: true, top_logprobs: s.topLogprobs ?? 0 } : {}),
      });
    return JSON.stringify({
      ...common,
      prompt: request.item.text,
      ...(s.logprobs ? { logprobs: s.topLogprobs ?? 1 } : {}),
    });
  }

  /**
   * One request through the own HTTP/1.1 client (http:) or undici's dispatch API (https:); no
   * stream objects or AbortSignal per request: the hot path of a load generator. Either way the
   * handler is one `ChatCall` object whose methods the client calls (no closures per request
   * beyond the cancel listener). Resolves exactly once, never rejects.
   */
  execute(request: DriverRequest): Promise<DriverOutcome> {
    if (!request.gate(this.path))
      return Promise.resolve({
        status: 0,
        e2eMs: 0,
        ttftMs: null,
        chunkOffsetsMs: [],
        errorClass: null,
        inputTokensClient: request.item.inputTokensClient,
        outputTokensClient: 0,
        usage: null,
        content: '',
        finishReason: null,
        gated: true,
      });
    return new Promise<DriverOutcome>((resolve) => {
      const call = new ChatCall(this, request, resolve);
      request.cancel.onAbort((reason) => call.cancel(reason));
      if (call.settled) return;
      const http1 = this.http1;
      if (http1 !== null) {
        try {
          call.http1Request = http1.requestText(request.headers, this.body(request));
        } catch (error) {
          call.cancel(error as Error);
          return;
        }
        http1.dispatch(call);
        return;
      }
      this.pool!.dispatch(
        {
          origin: this.origin,
          path: this.path,
          method: 'POST',
          headers: withHeaders(this.staticHeaders, request.headers),
          body: this.body(request),
        },
        call as unknown as Dispatcher.DispatchHandler,
      );
    });
  }

  /**
   * An outcome from the assembled response (null: nothing usable), in one literal of one shape
   * (no object spreads on the hot path). The client-side token count is taken here, once per
   * response, never per chunk.
   */
  outcomeOf(
    parsed: ParsedChatStream | null,
    inputTokensClient: number,
    status: number,
    e2eMs: number,
    ttftMs: number | null,
    chunkOffsetsMs: number[],
    errorClass: ErrorClass | null,
  ): DriverOutcome {
    const usage = parsed?.usage;
    const outcome: DriverOutcome = {
      status,
      sendDelayMs: 0,
      e2eMs,
      ttftMs,
      chunkOffsetsMs,
      errorClass,
      inputTokensClient,
      outputTokensClient: parsed == null ? 0 : countOutputTokens(parsed.content, this.options.countTokens),
      usage: usage
        ? {
            promptTokens: usage.promptTokens,
            completionTokens: usage.completionTokens,
            cachedTokens: usage.cachedTokens,
          }
        : null,
      content: parsed == null ? '' : parsed.content.slice(0, this.options.contentCapChars),
      finishReason: parsed == null ? null : parsed.finishReason,
    };
    if (parsed != null && this.scenario.logprobs) outcome.logprobs = parsed.logprobs;
    return outcome;
  }

  get streaming(): boolean {
    return this.scenario.stream;
  }

  get keepLogprobs(): boolean {
    return this.scenario.logprobs;
  }

  close(): Promise<void> {
    return this.http1 !== null ? this.http1.close() : this.pool!.close();
  }

  /** Ends a request on the own client (timeout, abort, a malformed stream): frees its socket. */
  cancelHttp1(call: ChatCall, reason: Error): void {
    this.http1!.cancel(call, reason);
  }

  /** For the engine's log line and the breaker gate. */
  get target(): string {
    return `${this.origin}${this.path}`;
  }
}

/**
 * Stream bytes between the socket read that stamped them and their parsing (SSE decode, JSON,
 * assembly: ~10 us a token event). When a decode step's tokens for hundreds of streams arrive
 * together, parsing each read before the next socket is read would stamp the last of them late
 * by the parsing of all before it; so a read only copies its bytes here with its stamp, and the
 * backlog parses them in later macrotasks of at most SLICE_MS each, letting the event loop poll
 * the sockets (and stamp their reads) in between. FIFO, so a response's end is handled after its
 * bytes. One per driver; single-threaded.
 */
class StreamBacklog {
  private calls: (ChatCall | null)[] = [];
  private bytes: (Buffer | null)[] = [];
  private offsets: number[] = [];
  private head = 0;
  private scheduled = false;

  push(call: ChatCall, bytes: Buffer | null, atMs: number): void {
    this.calls.push(call);
    this.bytes.push(bytes);
    this.offsets.push(atMs);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.drain);
    }
  }

  private readonly drain = (): void => {
    const deadline = performance.now() + SLICE_MS;
    const { calls, bytes, offsets } = this;
    let i = this.head;
    while (i < calls.length) {
      const call = calls[i]!;
      const chunk = bytes[i];
      calls[i] = null;
      bytes[i] = null;
      call.parseDeferred(chunk, offsets[i]);
      i++;
      // A response's end settles its request, and the engine's accounting and the user's next
      // request run as microtasks right after this callback, unseen by the deadline: one end
      // per macrotask, so the streams that end in the same decode step never add up to one stall.
      if (chunk === null || ((i & 7) === 0 && performance.now() >= deadline)) break;
    }
    if (i < calls.length) {
      this.head = i;
      setImmediate(this.drain);
      return;
    }
    this.calls = [];
    this.bytes = [];
    this.offsets = [];
    this.head = 0;
    this.scheduled = false;
  };
}

/** Longest the backlog parses in one macrotask before the event loop polls again. */
const SLICE_MS = 0.5;

/**
 * One chat request in flight: the own client's `Http1Exchange` (http:) or undici's dispatch
 * handler (https:), whose methods the client calls, and the state its outcome is built from.
 * Offsets run from the moment the request was written to the socket (onRequestSent); until then
 * from the engine's start, so a request that never got sent still has a duration.
 */
class ChatCall implements Http1Exchange {
  settled = false;
  http1Request = '';
  http1Connection: Http1Connection | null = null;
  private startMono: number;
  private readonly chunkOffsetsMs: number[] = [];
  private readonly decoder: SseDecoder | null;
  private readonly assembler: ChatStreamAssembler;
  private status = 0;
  private headersReceived = false;
  private httpClass: ReturnType<typeof httpErrorClass> = null;
  private serverRequestId: string | undefined = undefined;
  /** The answer's `Retry-After` header, raw (a 429 or 503 may carry one). */
  private retryAfter: string | undefined = undefined;
  /** Non-streamed body (or error body, up to ERROR_BODY_CAP bytes). */
  private readonly body = new Utf8BodyText();
  /** Body bytes received, streamed or not (see MAX_RESPONSE_BYTES). */
  private received = 0;
  private abortDispatch: ((reason: Error) => void) | null = null;

  constructor(
    private readonly driver: OpenAiChatDriver,
    private readonly request: DriverRequest,
    private readonly resolve: (outcome: DriverOutcome) => void,
  ) {
    this.startMono = request.startMono;
    this.decoder = driver.streaming ? new SseDecoder() : null;
    this.assembler = new ChatStreamAssembler({
      keepLogprobs: driver.keepLogprobs,
      bodyTemplate: driver.bodyTemplate,
    });
  }

  cancel(reason: Error): void {
    if (this.settled) return;
    if (this.http1Connection !== null || this.http1Request !== '') this.driver.cancelHttp1(this, reason);
    else if (this.abortDispatch) this.abortDispatch(reason);
    else this.fail(reason);
  }

  // --- Http1Exchange (own client) ---

  onRequestSent(sentMono?: number): void {
    this.startMono = sentMono ?? performance.now();
  }

  onResponseHead(status: number, requestId: string | undefined, retryAfter?: string): void {
    this.status = status;
    this.headersReceived = true;
    this.httpClass = httpErrorClass(status);
    this.serverRequestId = requestId;
    this.retryAfter = retryAfter;
  }

  /**
   * The client reuses its read buffer after the call: stream bytes are copied and parsed later,
   * by the backlog, with the offset of the read that carried them; a body is decoded or copied
   * by `Utf8BodyText`.
   */
  onResponseBody(bytes: Buffer, start: number, end: number, readMono: number): void {
    if (this.settled || this.tooLarge(end - start)) return;
    if (this.httpClass === null && this.decoder !== null) {
      const part = Buffer.allocUnsafe(end - start);
      bytes.copy(part, 0, start, end);
      this.driver.backlog.push(this, part, readMono - this.startMono);
      return;
    }
    if (this.httpClass !== null && this.body.bytes >= ERROR_BODY_CAP) return;
    this.body.add(bytes, start, end);
  }

  onResponseEnd(readMono: number): void {
    // After the stream bytes still in the backlog, in order.
    if (this.decoder !== null && this.httpClass === null)
      this.driver.backlog.push(this, null, readMono - this.startMono);
    else this.complete(readMono - this.startMono);
  }

  /** The backlog's call: stream bytes of one read, or (null) the end of the response. */
  parseDeferred(bytes: Buffer | null, at: number): void {
    if (this.settled) return;
    if (bytes === null) this.complete(at);
    else this.streamBytes(bytes, at);
  }

  // --- undici dispatch handler (https:) ---

  onConnect(abort: (reason?: Error) => void): void {
    this.abortDispatch = abort;
    const reason = this.request.cancel.reason;
    if (reason) abort(reason);
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    this.status = statusCode;
    this.headersReceived = true;
    this.httpClass = httpErrorClass(statusCode);
    this.serverRequestId = requestIdFromRaw(rawHeaders);
    if (this.httpClass !== null) this.retryAfter = headerFromRaw(rawHeaders, 'retry-after');
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.settled || this.tooLarge(chunk.length)) return true;
    const at = performance.now() - this.startMono;
    if (this.httpClass !== null || this.decoder === null) {
      if (this.httpClass === null || this.body.bytes < ERROR_BODY_CAP) this.body.addOwned(chunk);
      return true;
    }
    this.streamBytes(chunk, at);
    return true;
  }

  onComplete(): void {
    this.complete(performance.now() - this.startMono);
  }

  onError(error: Error): void {
    this.fail(error);
  }

  /** Counts `bytes` more of the body; past MAX_RESPONSE_BYTES ends the request and its connection. */
  private tooLarge(bytes: number): boolean {
    this.received += bytes;
    if (this.received <= MAX_RESPONSE_BYTES) return false;
    this.cancel(
      Object.assign(
        new Error(
          `response body over ${MAX_RESPONSE_BYTES / 1024 / 1024} MiB: cut off (a chat answer is kilobytes)`,
        ),
        { code: 'RESPONSE_TOO_LARGE' },
      ),
    );
    return true;
  }

  /** SSE bytes of one read; every content-bearing payload in them gets the read's offset `at`. */
  private streamBytes(chunk: Uint8Array, at: number): void {
    try {
      const payloads = this.decoder!.pushBytes(chunk);
      for (let i = 0; i < payloads.length; i++) {
        if (this.assembler.accept(payloads[i]).contentDelta !== '') this.chunkOffsetsMs.push(at);
      }
    } catch (error) {
      // A malformed stream ends the request: its outcome first, then the connection is dropped.
      this.fail(error);
      if (this.http1Connection !== null) this.driver.cancelHttp1(this, error as Error);
      else this.abortDispatch?.(error as Error);
    }
  }

  private complete(end: number): void {
    if (this.settled) return;
    const { chunkOffsetsMs, assembler, decoder } = this;
    const inputTokensClient = this.request.item.inputTokensClient;
    if (this.httpClass !== null) {
      this.settle({
        status: this.status,
        sendDelayMs: 0,
        e2eMs: end,
        ttftMs: null,
        chunkOffsetsMs,
        errorClass: this.httpClass,
        errorMessage: `HTTP ${this.status}: ${this.body.text().slice(0, ERROR_BODY_CAP)}`,
        inputTokensClient,
        outputTokensClient: 0,
        usage: null,
        content: '',
        finishReason: null,
        ...retryAfterField(this.retryAfter),
      });
      return;
    }
    try {
      if (decoder !== null) {
        const payloads = decoder.end();
        for (let i = 0; i < payloads.length; i++) {
          if (assembler.accept(payloads[i]).contentDelta !== '') chunkOffsetsMs.push(end);
        }
      } else {
        assembler.accept(this.body.text());
      }
    } catch (error) {
      this.fail(error);
      return;
    }
    const parsed = assembler.result();
    const streaming = decoder !== null;
    // Bytes but not one event: not an event stream at all (an HTML login page, a JSON error).
    const notSse = streaming && parsed.termination === 'empty' && this.received > 0;
    const truncated = streaming && (parsed.termination === 'truncated' || parsed.termination === 'empty');
    const outcome = this.driver.outcomeOf(
      parsed,
      inputTokensClient,
      this.status,
      end,
      streaming ? (chunkOffsetsMs[0] ?? null) : null,
      chunkOffsetsMs,
      notSse ? 'malformed-sse' : truncated ? 'stream-truncated' : null,
    );
    if (notSse) outcome.errorMessage = noEventStreamMessage(this.status, this.received);
    else if (truncated)
      outcome.errorMessage = `stream ended without [DONE] or finish_reason (${parsed.termination})`;
    this.settle(outcome);
  }

  private fail(error: unknown): void {
    if (this.settled) return;
    const { cancel, item } = this.request;
    const outcome = this.driver.outcomeOf(
      safeResult(this.assembler),
      item.inputTokensClient,
      this.status,
      performance.now() - this.startMono,
      this.chunkOffsetsMs[0] ?? null,
      this.chunkOffsetsMs,
      classifyError(error, cancel, this.headersReceived, this.decoder === null ? 'json' : 'sse'),
    );
    outcome.errorMessage = errorText(error);
    this.settle(outcome);
  }

  private settle(outcome: DriverOutcome): void {
    if (this.settled) return;
    this.settled = true;
    if (this.serverRequestId !== undefined) outcome.serverRequestId = this.serverRequestId;
    outcome.sendDelayMs = this.startMono - this.request.startMono;
    this.resolve(outcome);
  }
}

function safeResult(assembler: ChatStreamAssembler): ParsedChatStream | null {
  try {
    return assembler.result();
  } catch {
    return null;
  }
}

/** `x-request-id` or `x-sim-request-id` from undici's raw header list [name, value, ...]. */
function requestIdFromRaw(rawHeaders: Buffer[]): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name.length !== 12 && name.length !== 16) continue;
    const lower = name.toString('latin1').toLowerCase();
    if (lower === 'x-request-id' || lower === 'x-sim-request-id') return rawHeaders[i + 1].toString('latin1');
  }
  return undefined;
}

/** A header's value from undici's raw header list [name, value, ...]; `lowerName` in lower case. */
function headerFromRaw(rawHeaders: Buffer[], lowerName: string): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name.length === lowerName.length && name.toString('latin1').toLowerCase() === lowerName)
      return rawHeaders[i + 1].toString('latin1');
  }
  return undefined;
}

function withHeaders(flat: string[], extra: Record<string, string>): string[] {
  const out = flat.slice();
  for (const name in extra) out.push(name, extra[name]);
  return out;
}
