import { Pool, type Dispatcher } from 'undici';
import { countTokens } from 'gpt-tokenizer';
import type { ChatScenario } from '@fathom/contracts';
import { ChatStreamAssembler, SseDecoder, type ParsedChatStream } from '@fathom/semantic';
import type { DriverOutcome, DriverRequest, RequestDriver } from './request-outcome';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import { targetPath } from './target-url.util';

export interface HttpTarget {
  baseUrl: string;
  apiKey?: string;
}

export interface DriverOptions {
  /** Connections kept to the target: the shard's cap on requests in flight. */
  connections: number;
  /** Response text kept per record (records stay small). */
  contentCapChars: number;
}

/** Error bodies are kept up to this size for the record's errorMessage. */
const ERROR_BODY_CAP = 2048;

/**
 * OpenAI-compatible chat/completions and legacy completions, streaming or not. Timing contract:
 * every content-bearing SSE payload gets the performance.now() of the network chunk that carried
 * it, minus the moment the request was written to the socket (undici's onRequestSent; waiting for
 * a pooled connection and connecting are client time, reported as `sendDelayMs`); TTFT is the first such offset (vLLM/GuideLLM: first chunk
 * with content), the inter-token latencies are the gaps between consecutive offsets.
 */
export class OpenAiChatDriver implements RequestDriver {
  private readonly pool: Pool;
  private readonly origin: string;
  private readonly path: string;
  /** Flat [name, value, ...] list: undici takes it without re-walking an object per request. */
  private readonly staticHeaders: string[];
  /** Request bodies per dataset item: the same item always sends the same JSON. */
  private readonly bodies = new WeakMap<DriverRequest['item'], string>();

  constructor(
    private readonly scenario: ChatScenario,
    target: HttpTarget,
    private readonly options: DriverOptions,
  ) {
    const { origin, path } = targetPath(target.baseUrl, scenario.endpoint === 'chat' ? '/chat/completions' : '/completions');
    this.origin = origin;
    this.path = path;
    // Our own timer (requestTimeoutMs) bounds each request; undici's timers are switched off.
    this.pool = new Pool(origin, { connections: options.connections, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
    this.staticHeaders = [
      'content-type',
      'application/json',
      'accept',
      scenario.stream ? 'text/event-stream' : 'application/json',
      ...(target.apiKey ? ['authorization', `Bearer ${target.apiKey}`] : []),
    ];
  }

  private body(request: DriverRequest): string {
    let body = this.bodies.get(request.item);
    if (body === undefined) {
      body = this.renderBody(request);
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
    if (s.endpoint === 'chat')
      return JSON.stringify({
        ...common,
        messages: request.item.messages,
        ...(s.logprobs ? { logprobs: true, top_logprobs: s.topLogprobs ?? 0 } : {}),
      });
    return JSON.stringify({ ...common, prompt: request.item.text, ...(s.logprobs ? { logprobs: s.topLogprobs ?? 1 } : {}) });
  }

  /**
   * One request through undici's dispatch API (no stream objects, promises or AbortSignal per
   * request: the hot path of a load generator). Resolves exactly once, never rejects.
   */
  execute(request: DriverRequest): Promise<DriverOutcome> {
    const { cancel } = request;
    // Offsets run from the moment the request was on the socket (onRequestSent); until then from
    // the engine's start, so a request that never got sent still has a duration.
    let startMono = request.startMono;
    const inputTokensClient = request.item.inputTokensClient;
    if (!request.gate(this.path))
      return Promise.resolve({
        status: 0,
        e2eMs: 0,
        ttftMs: null,
        chunkOffsetsMs: [],
        errorClass: null,
        inputTokensClient,
        outputTokensClient: 0,
        usage: null,
        content: '',
        finishReason: null,
        gated: true,
      });
    const streaming = this.scenario.stream;
    const chunkOffsetsMs: number[] = [];
    const decoder = streaming ? new SseDecoder() : null;
    const assembler = new ChatStreamAssembler({ keepLogprobs: this.scenario.logprobs });
    let status = 0;
    let headersReceived = false;
    let httpClass: ReturnType<typeof httpErrorClass> = null;
    let serverRequestId: string | undefined;
    let raw = '';
    let settled = false;
    let abortDispatch: ((reason: Error) => void) | null = null;

    return new Promise<DriverOutcome>((resolve) => {
      const settle = (outcome: DriverOutcome) => {
        if (settled) return;
        settled = true;
        if (serverRequestId !== undefined) outcome.serverRequestId = serverRequestId;
        outcome.sendDelayMs = startMono - request.startMono;
        resolve(outcome);
      };
      const fail = (error: unknown, errorClass = classifyError(error, cancel, headersReceived)) => {
        settle({
          ...this.fromParsed(safeResult(assembler), inputTokensClient),
          status,
          e2eMs: performance.now() - startMono,
          ttftMs: chunkOffsetsMs[0] ?? null,
          chunkOffsetsMs,
          errorClass,
          errorMessage: errorText(error),
        });
      };
      cancel.onAbort((reason) => {
        if (abortDispatch) abortDispatch(reason);
        else fail(reason);
      });
      if (settled) return;
      this.pool.dispatch(
        {
          origin: this.origin,
          path: this.path,
          method: 'POST',
          headers: withHeaders(this.staticHeaders, request.headers),
          body: this.body(request),
        },
        {
          onConnect: (abort: (reason?: Error) => void) => {
            abortDispatch = abort;
            if (cancel.reason) abort(cancel.reason);
          },
          onRequestSent: () => {
            startMono = performance.now();
          },
          onHeaders: (statusCode: number, rawHeaders: Buffer[]) => {
            status = statusCode;
            headersReceived = true;
            httpClass = httpErrorClass(statusCode);
            serverRequestId = requestIdFromRaw(rawHeaders);
            return true;
          },
          onData: (chunk: Buffer) => {
            if (settled) return true;
            const at = performance.now() - startMono;
            if (httpClass !== null || decoder === null) {
              if (httpClass === null || raw.length < ERROR_BODY_CAP) raw += chunk.toString('utf8');
              return true;
            }
            try {
              for (const payload of decoder.pushBytes(chunk)) {
                if (assembler.accept(payload).contentDelta !== '') chunkOffsetsMs.push(at);
              }
            } catch (error) {
              fail(error);
              abortDispatch?.(error as Error);
            }
            return true;
          },
          onComplete: () => {
            if (settled) return;
            const end = performance.now() - startMono;
            if (httpClass !== null) {
              settle({
                status,
                e2eMs: end,
                ttftMs: null,
                chunkOffsetsMs,
                errorClass: httpClass,
                errorMessage: `HTTP ${status}: ${raw.slice(0, ERROR_BODY_CAP)}`,
                inputTokensClient,
                outputTokensClient: 0,
                usage: null,
                content: '',
                finishReason: null,
              });
              return;
            }
            try {
              if (decoder !== null) {
                for (const payload of decoder.end()) {
                  if (assembler.accept(payload).contentDelta !== '') chunkOffsetsMs.push(end);
                }
              } else {
                assembler.accept(raw);
              }
            } catch (error) {
              fail(error);
              return;
            }
            const parsed = assembler.result();
            const truncated = streaming && (parsed.termination === 'truncated' || parsed.termination === 'empty');
            settle({
              ...this.fromParsed(parsed, inputTokensClient),
              status,
              e2eMs: end,
              ttftMs: streaming ? (chunkOffsetsMs[0] ?? null) : null,
              chunkOffsetsMs,
              errorClass: truncated ? 'stream-truncated' : null,
              ...(truncated ? { errorMessage: `stream ended without [DONE] or finish_reason (${parsed.termination})` } : {}),
            });
          },
          onError: (error: Error) => fail(error),
        } as unknown as Dispatcher.DispatchHandler,
      );
    });
  }

  private fromParsed(
    parsed: ParsedChatStream | null,
    inputTokensClient: number,
  ): Pick<DriverOutcome, 'inputTokensClient' | 'outputTokensClient' | 'usage' | 'content' | 'finishReason' | 'logprobs'> {
    if (parsed === null) return { inputTokensClient, outputTokensClient: 0, usage: null, content: '', finishReason: null };
    return {
      inputTokensClient,
      outputTokensClient: parsed.content === '' ? 0 : countTokens(parsed.content),
      usage: parsed.usage
        ? {
            promptTokens: parsed.usage.promptTokens,
            completionTokens: parsed.usage.completionTokens,
            cachedTokens: parsed.usage.cachedTokens,
          }
        : null,
      content: parsed.content.slice(0, this.options.contentCapChars),
      finishReason: parsed.finishReason,
      ...(this.scenario.logprobs ? { logprobs: parsed.logprobs } : {}),
    };
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  /** For the engine's log line and the breaker gate. */
  get target(): string {
    return `${this.origin}${this.path}`;
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

function withHeaders(flat: string[], extra: Record<string, string>): string[] {
  const out = flat.slice();
  for (const name in extra) out.push(name, extra[name]);
  return out;
}
