import { randomUUID } from 'node:crypto';
import { QdrantClient, QdrantClientTimeoutError, withHeaders } from '@qdrant/js-client-rest';
import { secretText, type RagScenario } from '@fathom/contracts';
import type { PromptSource } from '../dataset/prompt.source';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import {
  topDocumentTexts,
  type DriverOutcome,
  type DriverRequest,
  type RequestDriver,
} from './request-outcome';
import { textVector } from './text-vector.util';

export type QdrantRagScenario = RagScenario & { qdrant: NonNullable<RagScenario['qdrant']> };

/**
 * The RAG index and retrieve layers through the official `@qdrant/js-client-rest`, against a
 * Qdrant node or the simulated target's Qdrant-compatible routes.
 * - prepare: the collection must exist (created from `qdrant.create` when it does not); its vector
 *   size is read from the collection info.
 * - index: `upsert` of `batchSize` points (UUID ids, vector from the text, payload {text});
 *   `index.shape` passes when Qdrant answers `completed` (wait) or `acknowledged`.
 * - retrieve: `query` (or `search`) with limit k; `retrieve.shape` passes when at most k points
 *   come back, best score first. With `withPayload`, the top points' payload `text` goes on the
 *   outcome as `retrievedDocuments` (without it Qdrant sends no texts and none are carried).
 * Dyeing headers travel through the client's `withHeaders` context. The engine's timeout and
 * aborts settle the outcome at once; the client's own timeout (the campaign's requestTimeoutMs)
 * ends the abandoned HTTP request.
 */
export class QdrantLayerDriver implements RequestDriver {
  private readonly client: QdrantClient;
  private readonly path: string;
  private dimensions = 0;

  constructor(
    private readonly scenario: QdrantRagScenario,
    target: HttpTarget,
    options: DriverOptions & { requestTimeoutMs: number },
    private readonly source: PromptSource,
  ) {
    const q = scenario.qdrant;
    const url = q.url ?? new URL(target.baseUrl).origin;
    this.client = new QdrantClient({
      url,
      ...(q.apiKey === undefined ? {} : { apiKey: secretText(q.apiKey) }),
      timeout: options.requestTimeoutMs,
      maxConnections: options.connections,
      checkCompatibility: false,
    });
    const collection = encodeURIComponent(q.collection);
    this.path =
      scenario.layer === 'index'
        ? `/collections/${collection}/points`
        : `/collections/${collection}/points/${q.api}`;
  }

  async prepare(): Promise<void> {
    const q = this.scenario.qdrant;
    const { exists } = await this.client.collectionExists(q.collection);
    if (!exists) {
      if (!q.create)
        throw new Error(
          `Qdrant collection '${q.collection}' does not exist (set scenario.qdrant.create to create it)`,
        );
      await this.client.createCollection(q.collection, {
        vectors: { size: q.create.size, distance: q.create.distance },
      });
    }
    const info = await this.client.getCollection(q.collection);
    const vectors = info.config.params.vectors as { size?: unknown } | undefined;
    if (typeof vectors?.size !== 'number')
      throw new Error(
        `Qdrant collection '${q.collection}' has named or no dense vectors; one unnamed vector is needed`,
      );
    this.dimensions = vectors.size;
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
    if (this.dimensions === 0)
      return {
        ...base,
        status: 0,
        e2eMs: 0,
        errorClass: 'other',
        errorMessage: 'driver not prepared',
        content: '',
      };
    const headers = {
      ...request.headers,
      'x-fathom-layer': this.scenario.layer,
      ...(this.scenario.granularity ? { 'x-fathom-granularity': this.scenario.granularity } : {}),
    };
    const call = withHeaders(headers, () => this.call(request));
    const cancelled = new Promise<never>((_, reject) => request.cancel.onAbort(reject));
    cancelled.catch(() => undefined);
    try {
      const { ok, summary, documents } = await Promise.race([call, cancelled]);
      const check = `${this.scenario.layer}.shape`;
      const outcome: DriverOutcome = {
        ...base,
        status: 200,
        e2eMs: performance.now() - request.startMono,
        errorClass: ok ? null : 'other',
        ...(ok ? {} : { errorMessage: `unexpected ${this.scenario.layer} response: ${summary}` }),
        content: summary,
        assertions: { [check]: ok },
      };
      if (ok && documents !== undefined && documents.length > 0) outcome.retrievedDocuments = documents;
      return outcome;
    } catch (error) {
      call.catch(() => undefined);
      const e2eMs = performance.now() - request.startMono;
      const status = (error as { status?: unknown }).status;
      if (typeof status === 'number') {
        const data = (error as { data?: unknown }).data;
        const detail = typeof data === 'object' ? JSON.stringify(data) : String(data);
        return {
          ...base,
          status,
          e2eMs,
          errorClass: httpErrorClass(status) ?? 'other',
          errorMessage: `HTTP ${status}: ${detail.slice(0, 500)}`,
          content: '',
        };
      }
      const errorClass =
        error instanceof QdrantClientTimeoutError ? 'timeout' : classifyError(error, request.cancel, false);
      return { ...base, status: 0, e2eMs, errorClass, errorMessage: errorText(error), content: '' };
    }
  }

  private async call(
    request: DriverRequest,
  ): Promise<{ ok: boolean; summary: string; documents?: string[] }> {
    const q = this.scenario.qdrant;
    const s = this.scenario;
    if (s.layer === 'index') {
      const texts = [request.item.text];
      for (let i = 1; i < s.batchSize; i++) texts.push(this.source.next().text);
      const result = await this.client.upsert(q.collection, {
        wait: q.wait,
        points: texts.map((text) => ({
          id: randomUUID(),
          vector: textVector(text, this.dimensions),
          payload: { text },
        })),
      });
      const ok = result.status === (q.wait ? 'completed' : 'acknowledged');
      return { ok, summary: `upserted ${texts.length}: ${result.status}` };
    }
    const vector = textVector(request.item.text, this.dimensions);
    const points =
      q.api === 'query'
        ? (await this.client.query(q.collection, { query: vector, limit: s.k, with_payload: q.withPayload }))
            .points
        : await this.client.search(q.collection, { vector, limit: s.k, with_payload: q.withPayload });
    let sorted = true;
    for (let i = 1; i < points.length; i++)
      if ((points[i].score ?? 0) > (points[i - 1].score ?? 0)) sorted = false;
    return {
      ok: points.length <= s.k && sorted,
      summary: `${points.length} points, top ${points[0]?.id ?? 'none'}`,
      ...(q.withPayload ? { documents: topDocumentTexts(points.map((p) => payloadText(p.payload))) } : {}),
    };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function payloadText(payload: Record<string, unknown> | null | undefined): string | undefined {
  const text = payload?.text;
  return typeof text === 'string' ? text : undefined;
}
