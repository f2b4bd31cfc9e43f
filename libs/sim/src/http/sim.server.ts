import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import {
  resolveSimConfig,
  type DeepPartial,
  type SimConfig,
  type SimConfigInput,
} from '../config/sim-config';
import { RealClock } from '../engine/clock';
import { ServingEngine } from '../engine/serving.engine';
import { FaultController } from '../faults/fault.controller';
import { FAULT_KINDS, type FaultKind } from '../faults/fault.types';
import { VllmMetrics } from '../metrics/vllm.metrics';
import { DcgmMetrics } from '../metrics/dcgm.metrics';
import { RagService } from '../rag/rag.service';
import { QdrantRoutes } from '../rag/qdrant.routes';
import { ToolsService, TOOL_VERSIONS, type ToolVersion } from '../tools/tools.service';
import { AgentsService } from '../agents/agents.service';
import { embedText } from '../text/embedding.util';
import { tokenize } from '../text/tokenizer.util';
import { GroundTruthStore } from './ground-truth.store';
import { handleChat, handleCompletion, handleResponses, injectedServerError } from './generation.handler';
import { ApiError, readJson, sendError, sendJson, sendText, zodToApiError } from './http.util';
import { embeddingRequestSchema } from './openai.schemas';
import { epochMinusMonotonicMs, type SimContext } from './sim.context';

export interface SimTargetOptions {
  port?: number;
  host?: string;
  /** Partial config: anything left out takes its default (SimConfig documents each). */
  config?: SimConfigInput | DeepPartial<SimConfig>;
}

export interface SimTarget {
  url: string;
  port: number;
  config: SimConfig;
  faults: FaultController;
  engine: ServingEngine;
  close(): Promise<void>;
}

const upsertSchema = z.object({
  vectors: z
    .array(
      z.object({
        id: z.string().min(1),
        vector: z.array(z.number()).optional(),
        text: z.string().optional(),
      }),
    )
    .min(1)
    .max(100000),
});
const retrieveSchema = z.object({
  query: z.string().optional(),
  vector: z.array(z.number()).optional(),
  k: z.number().int().min(1).max(1000).default(10),
});
const rerankSchema = z.object({
  query: z.string(),
  documents: z.array(z.string()).min(1).max(1000),
  top_n: z.number().int().min(1).optional(),
});
const agentsSchema = z.object({
  agents: z.number().int().min(2).max(64).default(3),
  steps: z.number().int().min(1).max(1000).default(12),
  /** true: NDJSON, one `{"type":"step",...}` line as each step ends, then `{"type":"result",...}`. */
  stream: z.boolean().default(false),
});

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (!result.success) throw zodToApiError(result.error);
  return result.data;
}

/** Starts the simulated target on loopback (port 0 picks a free port). */
export async function startSimTarget(options: SimTargetOptions = {}): Promise<SimTarget> {
  const config = resolveSimConfig(options.config ?? {});
  const faults = new FaultController();
  for (const fault of config.faults) faults.set(fault);
  const clock = new RealClock(config.timeScale);
  const engine = new ServingEngine(
    config.engine,
    clock,
    () => faults.get('latency_spike')?.addMs ?? 0,
    () => faults.get('kv_shrink')?.fraction ?? 1,
  );
  const legacy = config.metrics.legacyNames;
  const metrics = new VllmMetrics(config.model, engine, () => legacy);
  const dcgm = new DcgmMetrics(engine, config.engine.maxNumSeqs, config.engine.blockSize);
  const groundTruth = new GroundTruthStore(config.groundTruthCapacity);
  const scale = config.timeScale;
  const rag = new RagService(config.rag, config.seed, scale, faults);
  const tools = new ToolsService(
    faults,
    config.seed,
    { 'v1.9': config.tools.v19LatencyMs, 'v2.1': config.tools.v21LatencyMs },
    scale,
  );
  const agents = new AgentsService(config.agents, faults, config.seed, scale);
  let requestNumber = 0;
  const ctx: SimContext = {
    config,
    faults,
    engine,
    groundTruth,
    metrics,
    nextRequestNumber: () => ++requestNumber,
  };
  const created = Math.floor(Date.now() / 1000);

  const failIfInjected = (): void => {
    const injected = injectedServerError(ctx, ++requestNumber);
    if (injected) throw injected;
  };
  const qdrant = new QdrantRoutes(rag, failIfInjected);
  // Traffic dyeing as the target sees it: requests per `x-fathom-layer` / `x-fathom-granularity`.
  const ragTraffic: Record<string, number> = {};

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    const segments = path.split('/').filter(Boolean);
    const key = `${method} ${path}`;
    const layer = req.headers['x-fathom-layer'];
    if (typeof layer === 'string') {
      const granularity = req.headers['x-fathom-granularity'];
      const dye = `${layer.slice(0, 32)}/${typeof granularity === 'string' ? granularity.slice(0, 32) : '-'}`;
      // Bounded: a client sending ever new dyes cannot grow the table without limit.
      if (dye in ragTraffic || Object.keys(ragTraffic).length < 64)
        ragTraffic[dye] = (ragTraffic[dye] ?? 0) + 1;
    }
    // Qdrant's REST API lives at the root, as on a Qdrant node (see rag/qdrant.routes.ts).
    if (qdrant.matches(method, segments)) return qdrant.handle(req, res, method, segments, url);

    switch (key) {
      case 'POST /v1/chat/completions':
        return handleChat(ctx, req, res, await readJson(req));
      case 'POST /v1/completions':
        return handleCompletion(ctx, req, res, await readJson(req));
      case 'POST /v1/responses':
        return handleResponses(ctx, req, res, await readJson(req));
      case 'POST /v1/embeddings':
        return handleEmbeddings(req, res);
      case 'GET /v1/models':
        return sendJson(res, 200, {
          object: 'list',
          data: [
            {
              id: config.model,
              object: 'model',
              created,
              owned_by: 'fathom-sim',
              max_model_len: config.engine.maxModelLen,
            },
          ],
        });
      case 'GET /health':
        return sendJson(res, 200, { status: 'ok' });
      case 'GET /metrics':
        return sendText(res, 200, metrics.render(), 'text/plain; version=0.0.4; charset=utf-8');
      case 'GET /dcgm/metrics':
        return sendText(res, 200, dcgm.render(), 'text/plain; version=0.0.4; charset=utf-8');
      case 'GET /sim/stats':
        return sendJson(res, 200, {
          ...engine.snapshot(),
          groundTruthRecords: groundTruth.size,
          ragIndexSize: rag.size,
          ragTraffic,
        });
      case 'GET /sim/clock':
        return sendJson(res, 200, { epochMinusMonotonicMs: epochMinusMonotonicMs() });
      case 'GET /sim/faults':
        return sendJson(res, 200, { faults: faults.list(), kinds: FAULT_KINDS });
      case 'POST /sim/faults': {
        const body = await readJson(req);
        const specs = Array.isArray(body) ? body : [body];
        try {
          const set = specs.map((spec) => faults.set(spec));
          return sendJson(res, 200, { faults: set });
        } catch (error) {
          if (error instanceof z.ZodError) throw zodToApiError(error);
          throw error;
        }
      }
      case 'DELETE /sim/faults':
        faults.clearAll();
        return sendJson(res, 200, { faults: [] });
      case 'POST /rag/index/upsert': {
        failIfInjected();
        const body = parse(upsertSchema, await readJson(req));
        return sendJson(res, 200, await rag.upsert(body.vectors));
      }
      case 'POST /rag/retrieve': {
        failIfInjected();
        const body = parse(retrieveSchema, await readJson(req));
        const result = await rag.retrieve({ text: body.query, vector: body.vector }, body.k);
        return sendJson(res, 200, {
          results: result.items,
          service_ms: result.serviceMs,
          queued_ms: result.queuedMs,
          index_size: rag.size,
        });
      }
      case 'POST /rag/rerank': {
        failIfInjected();
        const body = parse(rerankSchema, await readJson(req));
        const result = await rag.rerank(body.query, body.documents, body.top_n ?? body.documents.length);
        return sendJson(res, 200, { results: result.results, in_use: result.inUse });
      }
      case 'GET /tools':
        return sendJson(res, 200, { tools: tools.list() });
      case 'POST /agents/run': {
        const body = parse(agentsSchema, await readJson(req));
        if (!body.stream) return sendJson(res, 200, await agents.run(body.agents, body.steps));
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        const result = await agents.run(body.agents, body.steps, (step) => {
          if (!res.destroyed) res.write(`${JSON.stringify({ type: 'step', ...step })}\n`);
        });
        const { steps, ...summary } = result;
        res.end(`${JSON.stringify({ type: 'result', ...summary, steps: steps.length })}\n`);
        return;
      }
      case 'GET /agents/mode':
        return sendJson(res, 200, { mode: agents.mode() });
    }

    if (method === 'GET' && segments[0] === 'v1' && segments[1] === 'models' && segments.length === 3) {
      if (segments[2] !== config.model)
        throw new ApiError(
          404,
          `The model '${segments[2]}' does not exist`,
          'invalid_request_error',
          'model',
          'model_not_found',
        );
      return sendJson(res, 200, { id: config.model, object: 'model', created, owned_by: 'fathom-sim' });
    }
    if (method === 'GET' && segments[0] === 'sim' && segments[1] === 'requests' && segments.length === 3) {
      const record = groundTruth.get(segments[2]);
      if (!record)
        throw new ApiError(
          404,
          `No ground truth for request '${segments[2]}'.`,
          'invalid_request_error',
          'id',
          'not_found',
        );
      return sendJson(res, 200, record);
    }
    if (method === 'DELETE' && segments[0] === 'sim' && segments[1] === 'faults' && segments.length === 3) {
      const kind = segments[2] as FaultKind;
      if (!FAULT_KINDS.includes(kind))
        throw new ApiError(
          400,
          `Unknown fault kind '${segments[2]}'. Known: ${FAULT_KINDS.join(', ')}.`,
          'invalid_request_error',
          'kind',
        );
      return sendJson(res, 200, { kind, cleared: faults.clear(kind) });
    }
    if (segments[0] === 'tools' && segments.length >= 3) {
      const name = segments[1];
      // GET /tools/:name/openapi.json (version by headers or ?version=) or /tools/:name/:version/openapi.json
      if (method === 'GET' && (segments[2] === 'openapi.json' || segments[3] === 'openapi.json')) {
        const requested =
          segments[3] === 'openapi.json' ? segments[2] : (url.searchParams.get('version') ?? undefined);
        let version: ToolVersion;
        if (requested !== undefined) {
          if (!TOOL_VERSIONS.includes(requested as ToolVersion))
            throw new ApiError(
              404,
              `Unknown tool version '${requested}' (v1.9 or v2.1).`,
              'invalid_request_error',
              'version',
            );
          version = requested as ToolVersion;
        } else version = tools.routeVersion(req.headers);
        return sendJson(res, 200, tools.openapi(name, version), { 'x-tool-version': version });
      }
      if (method === 'POST' && segments[2] === 'invoke') {
        failIfInjected();
        const version = tools.routeVersion(req.headers);
        const body = await readJson(req);
        return sendJson(res, 200, await tools.invoke(name, version, body), { 'x-tool-version': version });
      }
    }
    throw new ApiError(404, `Unknown route: ${method} ${path}`, 'invalid_request_error', null, 'unknown_url');
  }

  async function handleEmbeddings(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = parse(embeddingRequestSchema, await readJson(req));
    if (request.model !== config.model) {
      throw new ApiError(
        404,
        `The model \`${request.model}\` does not exist or you do not have access to it.`,
        'invalid_request_error',
        'model',
        'model_not_found',
      );
    }
    failIfInjected();
    const input = request.input;
    const texts: string[] =
      typeof input === 'string'
        ? [input]
        : typeof input[0] === 'string'
          ? (input as string[])
          : typeof input[0] === 'number'
            ? [(input as number[]).join(' ')]
            : (input as number[][]).map((ids) => ids.join(' '));
    const dims = request.dimensions ?? config.embeddings.dimensions;
    let tokens = 0;
    const data = texts.map((text, index) => {
      tokens += tokenize(text).length;
      const vector = embedText(text, dims, config.seed);
      const embedding =
        request.encoding_format === 'base64'
          ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64')
          : Array.from(vector);
      return { object: 'embedding', index, embedding };
    });
    // Embedding model time (model ms) = 2 + 0.01 x input tokens.
    await new Promise((resolve) => setTimeout(resolve, (2 + 0.01 * tokens) * scale));
    sendJson(res, 200, {
      object: 'list',
      data,
      model: config.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }

  const server: Server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      if (error instanceof ApiError) return sendError(res, error);
      // Nothing a client sends may take the process down: unknown failures become 500s.
      const message = error instanceof Error ? error.message : String(error);
      sendError(res, new ApiError(500, `Internal error: ${message}`, 'server_error'));
    });
  });
  server.keepAliveTimeout = 65000;
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    config,
    faults,
    engine,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
