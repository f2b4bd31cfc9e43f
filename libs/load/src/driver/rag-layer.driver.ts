import { Pool } from 'undici';
import type { RagScenario } from '@fathom/contracts';
import type { PromptSource } from '../dataset/prompt.source';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import { readBodyText } from './http-body.util';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import { serverRequestIdOf, type DriverOutcome, type DriverRequest, type RequestDriver } from './request-outcome';
import { targetPath } from './target-url.util';

const BODY_CAP = 8 * 1024 * 1024;
const DEFAULT_PATHS: Record<RagScenario['layer'], string> = {
  index: '/rag/index/upsert',
  retrieve: '/rag/retrieve',
  rerank: '/rag/rerank',
};

/**
 * One RAG layer at a time, over HTTP (the simulated target's `/rag/*` shape):
 * - index: POST {vectors: [{id, text}] x batchSize}; passes when `upserted` equals the batch.
 * - retrieve: POST {query, k}; passes when `results` is an array of at most k.
 * - rerank: POST {query, documents: batchSize texts}; a 503 "reranker busy" is http-5xx.
 * Each request carries `x-fathom-layer` besides the run's dyeing headers, and the check is tallied
 * as `<layer>.shape`.
 */
export class RagLayerDriver implements RequestDriver {
  private readonly pool: Pool;
  private readonly path: string;
  private readonly headers: Record<string, string>;
  private seq = 0;

  constructor(
    private readonly scenario: RagScenario,
    target: HttpTarget,
    options: DriverOptions,
    private readonly source: PromptSource,
  ) {
    const { origin } = targetPath(target.baseUrl, '');
    this.path = scenario.path ?? DEFAULT_PATHS[scenario.layer];
    this.pool = new Pool(origin, { connections: options.connections, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
    this.headers = {
      'content-type': 'application/json',
      'x-fathom-layer': scenario.layer,
      ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
    };
  }

  private requestBody(request: DriverRequest): { body: unknown; expected: number } {
    const s = this.scenario;
    const batch = () => {
      const texts = [request.item.text];
      for (let i = 1; i < s.batchSize; i++) texts.push(this.source.next().text);
      return texts;
    };
    switch (s.layer) {
      case 'index': {
        const texts = batch();
        return { body: { vectors: texts.map((text) => ({ id: `${request.requestId}-${this.seq++}`, text })) }, expected: texts.length };
      }
      case 'retrieve':
        return { body: { query: request.item.text, k: s.k }, expected: s.k };
      case 'rerank': {
        const documents = batch();
        return { body: { query: request.item.text, documents }, expected: documents.length };
      }
    }
  }

  async execute(request: DriverRequest): Promise<DriverOutcome> {
    const base = { ttftMs: null, chunkOffsetsMs: [], inputTokensClient: request.item.inputTokensClient, outputTokensClient: 0, usage: null, finishReason: null };
    if (!request.gate(this.path)) return { ...base, status: 0, e2eMs: 0, errorClass: null, content: '', gated: true };
    const { body, expected } = this.requestBody(request);
    let status = 0;
    try {
      const response = await this.pool.request({
        path: this.path,
        method: 'POST',
        headers: { ...this.headers, ...request.headers },
        body: JSON.stringify(body),
        signal: request.cancel.signal(),
      });
      status = response.statusCode;
      const text = await readBodyText(response.body, BODY_CAP);
      const e2eMs = performance.now() - request.startMono;
      const serverRequestId = serverRequestIdOf(response.headers);
      const ids = serverRequestId === undefined ? {} : { serverRequestId };
      const httpClass = httpErrorClass(status);
      if (httpClass) return { ...base, ...ids, status, e2eMs, errorClass: httpClass, errorMessage: `HTTP ${status}: ${text.slice(0, 500)}`, content: '' };
      const shapeOk = this.shapeOk(text, expected);
      const check = `${this.scenario.layer}.shape`;
      return {
        ...base,
        ...ids,
        status,
        e2eMs,
        errorClass: shapeOk ? null : 'other',
        ...(shapeOk ? {} : { errorMessage: `unexpected ${this.scenario.layer} response: ${text.slice(0, 200)}` }),
        content: text.slice(0, 256),
        assertions: { [check]: shapeOk },
      };
    } catch (error) {
      return { ...base, status, e2eMs: performance.now() - request.startMono, errorClass: classifyError(error, request.cancel, status !== 0), errorMessage: errorText(error), content: '' };
    }
  }

  private shapeOk(text: string, expected: number): boolean {
    let parsed: { upserted?: unknown; results?: unknown };
    try {
      parsed = JSON.parse(text);
    } catch {
      return false;
    }
    if (this.scenario.layer === 'index') return parsed.upserted === expected;
    return Array.isArray(parsed.results) && parsed.results.length <= expected;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
