import type { Pool } from 'undici';
import type { EmbeddingsScenario } from '@fathom/contracts';
import type { PromptItem } from '../dataset/prompt-item';
import type { PromptSource } from '../dataset/prompt.source';
import { BufferedExchange } from '../transport/buffered.exchange';
import { Http1Client } from '../transport/http1.client';
import { postTransport } from '../transport/post.transport';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import { readBodyText } from './http-body.util';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import {
  retryAfterField,
  retryAfterOfHeaders,
  serverRequestIdOf,
  type DriverOutcome,
  type DriverRequest,
  type RequestDriver,
} from './request-outcome';
import { targetPath } from './target-url.util';

/** Embedding responses are read whole (vectors are large); this caps what is held per request. */
const BODY_CAP = 64 * 1024 * 1024;

/**
 * OpenAI-compatible /embeddings: one request embeds `batchSize` texts; checks one vector per text.
 * `http:` targets go through Fathom's own HTTP/1.1 client (libs/load/src/transport), which also
 * tells when the request was written (`sendDelayMs`); `https:` targets keep undici (the own
 * client speaks plain TCP only).
 */
export class EmbeddingsDriver implements RequestDriver {
  private readonly pool: Pool | null;
  private readonly http1: Http1Client | null;
  private readonly path: string;
  private readonly headers: Record<string, string>;

  constructor(
    private readonly scenario: EmbeddingsScenario,
    target: HttpTarget,
    options: DriverOptions,
    private readonly source: PromptSource,
  ) {
    const { origin, path } = targetPath(target.baseUrl, '/embeddings');
    this.path = path;
    this.headers = {
      'content-type': 'application/json',
      ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
    };
    ({ http1: this.http1, pool: this.pool } = postTransport({
      origin,
      path,
      headers: this.headers,
      connections: options.connections,
    }));
  }

  async execute(request: DriverRequest): Promise<DriverOutcome> {
    const items = [request.item];
    for (let i = 1; i < this.scenario.batchSize; i++) items.push(this.source.next());
    const inputTokensClient = items.reduce((n, item) => n + item.inputTokensClient, 0);
    if (!request.gate(this.path)) return outcome(inputTokensClient, 0, 0, null, null, true);
    const body = JSON.stringify({ model: this.scenario.model, input: items.map((item) => item.text) });
    return this.http1 !== null
      ? this.executeHttp1(this.http1, request, items, inputTokensClient, body)
      : this.executeUndici(this.pool!, request, items, inputTokensClient, body);
  }

  private async executeHttp1(
    http1: Http1Client,
    request: DriverRequest,
    items: PromptItem[],
    inputTokensClient: number,
    body: string,
  ): Promise<DriverOutcome> {
    const exchange = new BufferedExchange(BODY_CAP, request.startMono);
    request.cancel.onAbort((reason) => http1.cancel(exchange, reason));
    try {
      exchange.http1Request = http1.requestText(request.headers, Http1Client.bodyTail(body));
      if (!request.cancel.aborted) http1.dispatch(exchange);
      await exchange.done;
    } catch (error) {
      const failed = outcome(
        inputTokensClient,
        exchange.status,
        exchange.endMono === 0 ? performance.now() - exchange.sentMono : exchange.endMono - exchange.sentMono,
        classifyError(error, request.cancel, exchange.headersReceived),
        errorText(error),
      );
      failed.sendDelayMs = exchange.sentMono - request.startMono;
      return failed;
    }
    const done = this.judge(
      exchange.status,
      exchange.text(),
      exchange.endMono - exchange.sentMono,
      items.length,
      inputTokensClient,
    );
    done.sendDelayMs = exchange.sentMono - request.startMono;
    if (exchange.requestId !== undefined) done.serverRequestId = exchange.requestId;
    if (done.errorClass !== null) Object.assign(done, retryAfterField(exchange.retryAfter));
    return done;
  }

  private async executeUndici(
    pool: Pool,
    request: DriverRequest,
    items: PromptItem[],
    inputTokensClient: number,
    body: string,
  ): Promise<DriverOutcome> {
    let status = 0;
    try {
      const response = await pool.request({
        path: this.path,
        method: 'POST',
        headers: { ...this.headers, ...request.headers },
        body,
        signal: request.cancel.signal(),
      });
      status = response.statusCode;
      const text = await readBodyText(response.body, BODY_CAP);
      const done = this.judge(
        status,
        text,
        performance.now() - request.startMono,
        items.length,
        inputTokensClient,
      );
      const serverRequestId = serverRequestIdOf(response.headers);
      if (serverRequestId !== undefined) done.serverRequestId = serverRequestId;
      if (done.errorClass !== null) Object.assign(done, retryAfterOfHeaders(response.headers));
      return done;
    } catch (error) {
      return outcome(
        inputTokensClient,
        status,
        performance.now() - request.startMono,
        classifyError(error, request.cancel, status !== 0),
        errorText(error),
      );
    }
  }

  /** The outcome of a complete response: HTTP status, JSON body, one vector per input. */
  private judge(
    status: number,
    text: string,
    e2eMs: number,
    inputs: number,
    inputTokensClient: number,
  ): DriverOutcome {
    const httpClass = httpErrorClass(status);
    if (httpClass)
      return outcome(inputTokensClient, status, e2eMs, httpClass, `HTTP ${status}: ${text.slice(0, 2048)}`);
    let parsed: { data?: { embedding?: unknown }[]; usage?: { prompt_tokens?: number } };
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      return outcome(inputTokensClient, status, e2eMs, 'other', `body is not JSON: ${errorText(error)}`);
    }
    const vectors = parsed.data?.filter((d) => Array.isArray(d.embedding)).length ?? 0;
    const promptTokens = parsed.usage?.prompt_tokens;
    const done = outcome(
      inputTokensClient,
      status,
      e2eMs,
      vectors === inputs ? null : 'other',
      vectors === inputs ? null : `${vectors} embeddings for ${inputs} inputs`,
    );
    done.usage =
      typeof promptTokens === 'number' ? { promptTokens, completionTokens: 0, cachedTokens: null } : null;
    done.content = `${vectors} vectors`;
    return done;
  }

  close(): Promise<void> {
    return this.http1 !== null ? this.http1.close() : this.pool!.close();
  }
}

/** One outcome literal of one shape; optional fields are assigned after. */
function outcome(
  inputTokensClient: number,
  status: number,
  e2eMs: number,
  errorClass: DriverOutcome['errorClass'],
  errorMessage: string | null,
  gated = false,
): DriverOutcome {
  const out: DriverOutcome = {
    status,
    e2eMs,
    ttftMs: null,
    chunkOffsetsMs: [],
    errorClass,
    inputTokensClient,
    outputTokensClient: 0,
    usage: null,
    content: '',
    finishReason: null,
  };
  if (errorMessage !== null) out.errorMessage = errorMessage;
  if (gated) out.gated = true;
  return out;
}
