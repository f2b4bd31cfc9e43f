import { Pool } from 'undici';
import type { RagScenario } from '@fathom/contracts';
import type { PromptSource } from '../dataset/prompt.source';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import { readBodyText } from './http-body.util';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import {
  retryAfterOfHeaders,
  serverRequestIdOf,
  topDocumentTexts,
  type DriverOutcome,
  type DriverRequest,
  type RequestDriver,
} from './request-outcome';
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
 * - retrieve: POST {query, k}; passes when `results` is an array of at most k. The texts of the
 *   top results (`text`, `content`, `document` or `payload.text`) go on the outcome as
 *   `retrievedDocuments`.
 * - rerank: POST {query, documents: batchSize texts drawn after the query}; a 503 "reranker busy"
 *   is http-5xx. The top documents by `relevance_score` (each result's `index` into what was
 *   sent) go on the outcome as `retrievedDocuments`.
 * Each request carries `x-fathom-layer` (and `x-fathom-granularity` when set) besides the run's
 * dyeing headers, and the check is tallied
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
    this.pool = new Pool(origin, {
      connections: options.connections,
      pipelining: 1,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    this.headers = {
      'content-type': 'application/json',
      'x-fathom-layer': scenario.layer,
      ...(scenario.granularity ? { 'x-fathom-granularity': scenario.granularity } : {}),
      ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
    };
  }

  private requestBody(request: DriverRequest): { body: unknown; expected: number; documents?: string[] } {
    const s = this.scenario;
    const batch = () => {
      const texts = [request.item.text];
      for (let i = 1; i < s.batchSize; i++) texts.push(this.source.next().text);
      return texts;
    };
    switch (s.layer) {
      case 'index': {
        const texts = batch();
        return {
          body: { vectors: texts.map((text) => ({ id: `${request.requestId}-${this.seq++}`, text })) },
          expected: texts.length,
        };
      }
      case 'retrieve':
        return { body: { query: request.item.text, k: s.k }, expected: s.k };
      case 'rerank': {
        // The query is not one of its documents: a self-match would always rank first and
        // read as a perfect query/document match.
        const documents: string[] = [];
        for (let i = 0; i < s.batchSize; i++) documents.push(this.source.next().text);
        return { body: { query: request.item.text, documents }, expected: documents.length, documents };
      }
    }
  }

  async execute(request: DriverRequest): Promise<DriverOutcome> {
    const base = {
      ttftMs: null,
      chunkOffsetsMs: [],
      inputTokensClient: request.item.inputTokensClient,
      outputTokensClient: 0,
      usage: null,
      finishReason: null,
    };
    if (!request.gate(this.path))
      return { ...base, status: 0, e2eMs: 0, errorClass: null, content: '', gated: true };
    const { body, expected, documents } = this.requestBody(request);
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
      if (httpClass)
        return {
          ...base,
          ...ids,
          status,
          e2eMs,
          errorClass: httpClass,
          errorMessage: `HTTP ${status}: ${text.slice(0, 500)}`,
          content: '',
          ...retryAfterOfHeaders(response.headers),
        };
      const parsed = parseJson(text);
      const shapeOk = this.shapeOk(parsed, expected);
      const check = `${this.scenario.layer}.shape`;
      const outcome: DriverOutcome = {
        ...base,
        ...ids,
        status,
        e2eMs,
        errorClass: shapeOk ? null : 'other',
        ...(shapeOk
          ? {}
          : { errorMessage: `unexpected ${this.scenario.layer} response: ${text.slice(0, 200)}` }),
        content: text.slice(0, 256),
        assertions: { [check]: shapeOk },
      };
      if (shapeOk && this.scenario.layer !== 'index') {
        const texts = retrievedTexts(parsed as { results: unknown[] }, documents);
        if (texts.length > 0) outcome.retrievedDocuments = texts;
      }
      return outcome;
    } catch (error) {
      return {
        ...base,
        status,
        e2eMs: performance.now() - request.startMono,
        errorClass: classifyError(error, request.cancel, status !== 0),
        errorMessage: errorText(error),
        content: '',
      };
    }
  }

  private shapeOk(parsed: { upserted?: unknown; results?: unknown } | null, expected: number): boolean {
    if (parsed === null) return false;
    if (this.scenario.layer === 'index') return parsed.upserted === expected;
    return Array.isArray(parsed.results) && parsed.results.length <= expected;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

function parseJson(text: string): { upserted?: unknown; results?: unknown } | null {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * The top documents' texts of a retrieve or rerank answer (`results` in rank order), within
 * RETRIEVED_DOCUMENT_LIMITS. Rerank (`sent` given): each result's `index` points into the
 * documents sent, ranked by `relevance_score` when every result has one. Retrieve: each result's
 * own text (`text`, `content`, `document`, or `payload.text`). A top rank without a text is left
 * out, not replaced by a lower one.
 */
export function retrievedTexts(answer: { results: unknown[] }, sent?: readonly string[]): string[] {
  const results = answer.results.filter(
    (r): r is Record<string, unknown> => typeof r === 'object' && r !== null,
  );
  if (sent !== undefined) {
    const ranked = results.every((r) => typeof r.relevance_score === 'number')
      ? [...results].sort((a, b) => (b.relevance_score as number) - (a.relevance_score as number))
      : results;
    return topDocumentTexts(ranked.map((r) => (typeof r.index === 'number' ? sent[r.index] : undefined)));
  }
  return topDocumentTexts(results.map(resultText));
}

function resultText(result: Record<string, unknown>): string | undefined {
  for (const key of ['text', 'content', 'document'])
    if (typeof result[key] === 'string') return result[key] as string;
  const payload = result.payload as Record<string, unknown> | null | undefined;
  return typeof payload?.text === 'string' ? payload.text : undefined;
}
