import { Pool } from 'undici';
import type { EmbeddingsScenario } from '@fathom/contracts';
import type { PromptSource } from '../dataset/prompt.source';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import { readBodyText } from './http-body.util';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import type { DriverOutcome, DriverRequest, RequestDriver } from './request-outcome';
import { targetPath } from './target-url.util';

/** Embedding responses are read whole (vectors are large); this caps what is held per request. */
const BODY_CAP = 64 * 1024 * 1024;

/** OpenAI-compatible /embeddings: one request embeds `batchSize` texts; checks one vector per text. */
export class EmbeddingsDriver implements RequestDriver {
  private readonly pool: Pool;
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
    this.pool = new Pool(origin, { connections: options.connections, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
    this.headers = { 'content-type': 'application/json', ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}) };
  }

  async execute(request: DriverRequest): Promise<DriverOutcome> {
    const items = [request.item];
    for (let i = 1; i < this.scenario.batchSize; i++) items.push(this.source.next());
    const inputTokensClient = items.reduce((n, item) => n + item.inputTokensClient, 0);
    const base = { ttftMs: null, chunkOffsetsMs: [], inputTokensClient, outputTokensClient: 0, content: '', finishReason: null };
    if (!request.gate(this.path)) return { ...base, status: 0, e2eMs: 0, errorClass: null, usage: null, gated: true };
    let status = 0;
    try {
      const response = await this.pool.request({
        path: this.path,
        method: 'POST',
        headers: { ...this.headers, ...request.headers },
        body: JSON.stringify({ model: this.scenario.model, input: items.map((item) => item.text) }),
        signal: request.cancel.signal(),
      });
      status = response.statusCode;
      const text = await readBodyText(response.body, BODY_CAP);
      const e2eMs = performance.now() - request.startMono;
      const httpClass = httpErrorClass(status);
      if (httpClass) return { ...base, status, e2eMs, errorClass: httpClass, errorMessage: `HTTP ${status}: ${text.slice(0, 2048)}`, usage: null };
      let parsed: { data?: { embedding?: unknown }[]; usage?: { prompt_tokens?: number } };
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        return { ...base, status, e2eMs, errorClass: 'other', errorMessage: `body is not JSON: ${errorText(error)}`, usage: null };
      }
      const vectors = parsed.data?.filter((d) => Array.isArray(d.embedding)).length ?? 0;
      const promptTokens = parsed.usage?.prompt_tokens;
      return {
        ...base,
        status,
        e2eMs,
        errorClass: vectors === items.length ? null : 'other',
        ...(vectors === items.length ? {} : { errorMessage: `${vectors} embeddings for ${items.length} inputs` }),
        usage: typeof promptTokens === 'number' ? { promptTokens, completionTokens: 0, cachedTokens: null } : null,
        content: `${vectors} vectors`,
      };
    } catch (error) {
      return {
        ...base,
        status,
        e2eMs: performance.now() - request.startMono,
        errorClass: classifyError(error, request.cancel, status !== 0),
        errorMessage: errorText(error),
        usage: null,
      };
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
