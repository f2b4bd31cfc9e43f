import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { ApiError, readJson, sendJson } from '../http/http.util';
import type { RagService } from './rag.service';
import type { IndexHit, PointId, VectorIndex } from './vector.index';

/**
 * The subset of Qdrant's REST API that `@qdrant/js-client-rest` 1.x uses for the RAG index and
 * retrieve layers, served over the sim's RAG index with its latency physics (RagService):
 *   GET  /                                          {title, version}, bare (the client's compatibility check)
 *   GET  /collections                               list
 *   GET  /collections/{name}                        info
 *   GET  /collections/{name}/exists                 {exists}
 *   PUT  /collections/{name}                        create {vectors: {size, distance}}
 *   DELETE /collections/{name}                      drop
 *   PUT  /collections/{name}/points?wait=           upsert {points: [...]} or {batch: {...}}
 *   POST /collections/{name}/points/search          search (deprecated in Qdrant, still used)
 *   POST /collections/{name}/points/query           query {query: vector | {nearest} | point id}
 * Every other answer is Qdrant's envelope `{result, status: "ok", time}`; failures are
 * `{status: {error}, time}` with Qdrant's status codes (400 bad input, 404 unknown collection,
 * 409 collection exists). Not simulated (refused with 400, never ignored): filters, prefetch,
 * named and sparse vectors, payload selectors other than true/false/field list, distances other
 * than Cosine and Dot.
 */

/** The Qdrant API version this subset follows (the client warns when majors differ). */
export const QDRANT_API_VERSION = '1.18.0';

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const pointIdSchema = z.union([
  z.number().int().nonnegative(),
  z.string().regex(UUID, 'point ids are unsigned integers or UUIDs'),
]);
const payloadSchema = z.record(z.string(), z.unknown()).nullable().optional();
const denseVector = z.array(z.number()).min(1);
const withPayloadSchema = z.union([z.boolean(), z.array(z.string())]).optional();

const createSchema = z.object({
  vectors: z.object(
    { size: z.number().int().min(1).max(65536), distance: z.enum(['Cosine', 'Dot']) },
    { message: 'only one unnamed dense vector {size, distance: Cosine|Dot} is simulated' },
  ),
});
const upsertSchema = z.union([
  z.object({
    points: z.array(z.object({ id: pointIdSchema, vector: denseVector, payload: payloadSchema })).min(1),
  }),
  z.object({
    batch: z.object({
      ids: z.array(pointIdSchema).min(1),
      vectors: z.array(denseVector),
      payloads: z.array(payloadSchema).optional(),
    }),
  }),
]);
const searchSchema = z.object({
  vector: denseVector,
  limit: z.number().int().min(1).max(10000),
  offset: z.number().int().min(0).nullable().optional(),
  with_payload: withPayloadSchema.nullable(),
  with_vector: z.boolean().nullable().optional(),
  score_threshold: z.number().nullable().optional(),
  filter: z.null().optional(),
});
const querySchema = z.object({
  query: z.union([denseVector, z.object({ nearest: denseVector }), pointIdSchema]),
  limit: z.number().int().min(1).max(10000).nullable().optional(),
  offset: z.number().int().min(0).nullable().optional(),
  with_payload: withPayloadSchema.nullable(),
  with_vector: z.boolean().nullable().optional(),
  score_threshold: z.number().nullable().optional(),
  filter: z.null().optional(),
  prefetch: z.null().optional(),
  using: z.null().optional(),
});

class QdrantError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue.path.map(String).join('.');
  throw new QdrantError(400, `Format error in JSON body: ${where ? `${where}: ` : ''}${issue.message}`);
}

export class QdrantRoutes {
  private operationId = 0;

  constructor(
    private readonly rag: RagService,
    /** Throws the sim's injected 5xx (http_5xx fault) when it hits this request. */
    private readonly failIfInjected: () => void,
  ) {}

  /** True when the request is one of ours (it has then been answered). */
  matches(method: string, segments: string[]): boolean {
    return segments[0] === 'collections' || (method === 'GET' && segments.length === 0);
  }

  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    segments: string[],
    url: URL,
  ): Promise<void> {
    // The root answers bare {title, version} (no envelope), as Qdrant does.
    if (segments.length === 0)
      return sendJson(res, 200, {
        title: 'fathom-sim (qdrant-compatible subset)',
        version: QDRANT_API_VERSION,
      });
    const started = performance.now();
    const reply = (status: number, body: object) =>
      sendJson(res, status, { ...body, time: (performance.now() - started) / 1000 });
    try {
      const result = await this.route(req, method, segments, url);
      reply(200, { result, status: 'ok' });
    } catch (error) {
      if (error instanceof QdrantError) return reply(error.status, { status: { error: error.message } });
      if (error instanceof ApiError) return reply(error.status, { status: { error: error.message } });
      throw error;
    }
  }

  private collection(name: string): VectorIndex {
    const index = this.rag.collection(name);
    if (!index) throw new QdrantError(404, `Not found: Collection \`${name}\` doesn't exist!`);
    return index;
  }

  private async route(req: IncomingMessage, method: string, segments: string[], url: URL): Promise<unknown> {
    const name = segments[1] === undefined ? undefined : decodeURIComponent(segments[1]);
    const rest = segments.slice(2).join('/');
    if (name === undefined && method === 'GET')
      return { collections: this.rag.collectionNames().map((n) => ({ name: n })) };
    if (name === undefined) throw new QdrantError(404, `Unknown route: ${method} /collections`);
    switch (`${method} ${rest}`) {
      case 'GET ':
        return this.info(this.collection(name));
      case 'GET exists':
        return { exists: this.rag.collection(name) !== undefined };
      case 'PUT ': {
        const body = parse(createSchema, await readJson(req));
        if (!this.rag.createCollection(name, body.vectors.size, body.vectors.distance))
          throw new QdrantError(409, `Wrong input: Collection \`${name}\` already exists!`);
        return true;
      }
      case 'DELETE ':
        return this.rag.deleteCollection(name);
      case 'PUT points':
      case 'POST points':
        return this.upsert(
          this.collection(name),
          await readJson(req),
          url.searchParams.get('wait') === 'true',
        );
      case 'POST points/search': {
        this.failIfInjected();
        const index = this.collection(name);
        const body = parse(searchSchema, await readJson(req));
        return this.search(index, this.dense(index, body.vector), body.limit, body);
      }
      case 'POST points/query': {
        this.failIfInjected();
        const index = this.collection(name);
        const body = parse(querySchema, await readJson(req));
        const q = body.query;
        let vector: Float32Array;
        if (Array.isArray(q)) vector = this.dense(index, q);
        else if (typeof q === 'object') vector = this.dense(index, q.nearest);
        else {
          const at = index.indexOf(q);
          if (at === undefined) throw new QdrantError(404, `Not found: No point with id ${q} found`);
          vector = index.vectorAt(at);
        }
        // Qdrant's query API defaults: limit 10, no payload, no vector.
        return {
          points: await this.search(index, vector, body.limit ?? 10, {
            ...body,
            with_payload: body.with_payload ?? false,
          }),
        };
      }
    }
    throw new QdrantError(404, `Unknown route: ${method} /${segments.join('/')}`);
  }

  private dense(index: VectorIndex, vector: number[]): Float32Array {
    if (vector.length !== index.dimensions)
      throw new QdrantError(
        400,
        `Wrong input: Vector dimension error: expected dim: ${index.dimensions}, got ${vector.length}`,
      );
    return Float32Array.from(vector);
  }

  private async upsert(
    index: VectorIndex,
    raw: unknown,
    wait: boolean,
  ): Promise<{ operation_id: number; status: string }> {
    this.failIfInjected();
    const body = parse(upsertSchema, raw);
    const points =
      'points' in body
        ? body.points.map((p) => ({
            id: p.id as PointId,
            vector: this.dense(index, p.vector),
            payload: p.payload ?? null,
          }))
        : body.batch.ids.map((id, i) => {
            const vector = body.batch.vectors[i];
            if (vector === undefined)
              throw new QdrantError(
                400,
                `Wrong input: batch has ${body.batch.ids.length} ids and ${body.batch.vectors.length} vectors`,
              );
            return {
              id: id as PointId,
              vector: this.dense(index, vector),
              payload: body.batch.payloads?.[i] ?? null,
            };
          });
    const operationId = ++this.operationId;
    const applied = this.rag.upsertInto(index, points);
    // wait=false: Qdrant acknowledges once the operation is in its WAL and applies it later.
    if (!wait) return { operation_id: operationId, status: 'acknowledged' };
    await applied;
    return { operation_id: operationId, status: 'completed' };
  }

  private async search(
    index: VectorIndex,
    vector: Float32Array,
    limit: number,
    options: {
      offset?: number | null;
      with_payload?: boolean | string[] | null;
      with_vector?: boolean | null;
      score_threshold?: number | null;
    },
  ): Promise<object[]> {
    const { hits } = await this.rag.searchIn(
      index,
      vector,
      limit,
      options.offset ?? 0,
      options.score_threshold ?? -Infinity,
    );
    // The search endpoint's default is with_payload: true (the client sends it explicitly).
    const withPayload = options.with_payload ?? true;
    return hits.map((hit: IndexHit) => {
      const payload = index.payloads[hit.at];
      let shown: Record<string, unknown> | null = null;
      if (withPayload === true) shown = payload ?? {};
      else if (Array.isArray(withPayload))
        shown = Object.fromEntries(
          withPayload.filter((key) => payload && key in payload).map((key) => [key, payload![key]]),
        );
      return {
        id: index.ids[hit.at],
        version: 0,
        score: hit.score,
        payload: shown,
        vector: options.with_vector ? Array.from(index.vectorAt(hit.at)) : null,
      };
    });
  }

  /** Collection info: only what the sim models (one unnamed dense vector, one shard, brute-force search). */
  private info(index: VectorIndex): object {
    return {
      status: 'green',
      optimizer_status: 'ok',
      // Brute-force search: no point sits in an HNSW index.
      indexed_vectors_count: 0,
      points_count: index.size,
      segments_count: 1,
      config: {
        params: {
          vectors: { size: index.dimensions, distance: index.distance },
          shard_number: 1,
          replication_factor: 1,
        },
      },
      payload_schema: {},
    };
  }
}
