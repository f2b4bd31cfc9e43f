import type { FaultController } from '../faults/fault.controller';
import type { FaultOf } from '../faults/fault.types';
import { fnv1a, Prng } from '../text/prng.util';
import { ApiError } from '../http/http.util';

export type ToolVersion = 'v1.9' | 'v2.1';
export const TOOL_VERSIONS: readonly ToolVersion[] = ['v1.9', 'v2.1'];

interface JsonSchema {
  type: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: string[];
  format?: string;
}

interface ToolDefinition {
  name: string;
  description: string;
  request: JsonSchema;
  responses: Record<ToolVersion, JsonSchema>;
  /** The field a `type_change` drift turns into a string, per version (a dotted path). */
  typeChangeField: Record<ToolVersion, string>;
  /** The required field a `required_dropped` drift removes. */
  droppableField: string;
}

const TOOLS: ToolDefinition[] = [
  {
    name: 'weather',
    description: 'Current weather for a city.',
    request: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    responses: {
      'v1.9': {
        type: 'object',
        properties: { city: { type: 'string' }, temp_c: { type: 'number' }, conditions: { type: 'string' } },
        required: ['city', 'temp_c', 'conditions'],
      },
      'v2.1': {
        type: 'object',
        properties: {
          city: { type: 'string' },
          temperature: {
            type: 'object',
            properties: { value: { type: 'number' }, unit: { type: 'string', enum: ['C', 'F'] } },
            required: ['value', 'unit'],
          },
          conditions: { type: 'string' },
          observed_at: { type: 'string', format: 'date-time' },
        },
        required: ['city', 'temperature', 'conditions', 'observed_at'],
      },
    },
    typeChangeField: { 'v1.9': 'temp_c', 'v2.1': 'temperature.value' },
    droppableField: 'conditions',
  },
  {
    name: 'orders',
    description: 'Look up an order by id.',
    request: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
    responses: {
      'v1.9': {
        type: 'object',
        properties: { order_id: { type: 'string' }, status: { type: 'string' }, total: { type: 'number' } },
        required: ['order_id', 'status', 'total'],
      },
      'v2.1': {
        type: 'object',
        properties: {
          order_id: { type: 'string' },
          status: { type: 'string', enum: ['pending', 'shipped', 'delivered', 'cancelled'] },
          total: {
            type: 'object',
            properties: { amount: { type: 'number' }, currency: { type: 'string' } },
            required: ['amount', 'currency'],
          },
          items: {
            type: 'array',
            items: {
              type: 'object',
              properties: { sku: { type: 'string' }, quantity: { type: 'integer' } },
              required: ['sku', 'quantity'],
            },
          },
        },
        required: ['order_id', 'status', 'total', 'items'],
      },
    },
    typeChangeField: { 'v1.9': 'total', 'v2.1': 'total.amount' },
    droppableField: 'status',
  },
];

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Applies a schema_drift fault to a response schema (the drifted contract is the served one). */
function driftSchema(
  tool: ToolDefinition,
  version: ToolVersion,
  schema: JsonSchema,
  drift: FaultOf<'schema_drift'> | undefined,
): JsonSchema {
  if (drift === undefined || (drift.tool !== undefined && drift.tool !== tool.name)) return schema;
  const out = clone(schema);
  if (drift.mode === 'type_change') {
    const path = tool.typeChangeField[version].split('.');
    let node = out;
    for (const key of path.slice(0, -1)) node = node.properties![key];
    node.properties![path[path.length - 1]] = { type: 'string' };
  } else if (drift.mode === 'required_added') {
    out.properties!.region = { type: 'string' };
    out.required = [...(out.required ?? []), 'region'];
  } else {
    delete out.properties![tool.droppableField];
    out.required = (out.required ?? []).filter((f) => f !== tool.droppableField);
  }
  return out;
}

/** A value that satisfies `schema` (deterministic per seed). */
function sample(schema: JsonSchema, rng: Prng, name: string): unknown {
  if (schema.enum) return schema.enum[rng.int(schema.enum.length)];
  switch (schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(schema.properties ?? {})) out[key] = sample(child, rng, key);
      return out;
    }
    case 'array':
      return schema.items ? [sample(schema.items, rng, name), sample(schema.items, rng, name)] : [];
    case 'number':
      return Math.round(rng.next() * 4000) / 100;
    case 'integer':
      return 1 + rng.int(5);
    case 'boolean':
      return rng.next() < 0.5;
    default:
      if (schema.format === 'date-time')
        return new Date(Date.UTC(2026, 0, 1) + rng.int(86400) * 1000).toISOString();
      return `${name}-${rng.int(1000)}`;
  }
}

/**
 * Tool APIs with versioned contracts. `x-gray-flag: v2` routes to v2.1, anything else to v1.9
 * (an explicit `x-tool-version` header wins). The schema_drift fault changes the served
 * OpenAPI document and the responses together.
 */
export class ToolsService {
  constructor(
    private readonly faults: FaultController,
    private readonly seed: number,
    private readonly latencyMs: Record<ToolVersion, number>,
    private readonly timeScale: number,
  ) {}

  list(): { name: string; description: string; versions: readonly ToolVersion[] }[] {
    return TOOLS.map((t) => ({ name: t.name, description: t.description, versions: TOOL_VERSIONS }));
  }

  private tool(name: string): ToolDefinition {
    const tool = TOOLS.find((t) => t.name === name);
    if (!tool)
      throw new ApiError(404, `Unknown tool '${name}'.`, 'invalid_request_error', 'tool', 'tool_not_found');
    return tool;
  }

  routeVersion(headers: Record<string, string | string[] | undefined>): ToolVersion {
    const explicit = headers['x-tool-version'];
    if (explicit === 'v1.9' || explicit === 'v2.1') return explicit;
    if (explicit !== undefined)
      throw new ApiError(
        400,
        `Unknown tool version '${String(explicit)}' (v1.9 or v2.1).`,
        'invalid_request_error',
        'x-tool-version',
      );
    return headers['x-gray-flag'] === 'v2' ? 'v2.1' : 'v1.9';
  }

  openapi(name: string, version: ToolVersion): unknown {
    const tool = this.tool(name);
    const schema = driftSchema(tool, version, tool.responses[version], this.faults.get('schema_drift'));
    return {
      openapi: '3.0.3',
      info: { title: `${tool.name} tool`, version: version.slice(1) },
      paths: {
        [`/tools/${tool.name}/invoke`]: {
          post: {
            operationId: `${tool.name}_invoke`,
            summary: tool.description,
            requestBody: { required: true, content: { 'application/json': { schema: tool.request } } },
            responses: { '200': { description: 'OK', content: { 'application/json': { schema } } } },
          },
        },
      },
    };
  }

  async invoke(name: string, version: ToolVersion, args: unknown): Promise<unknown> {
    const tool = this.tool(name);
    const missing = (tool.request.required ?? []).filter(
      (f) => typeof (args as Record<string, unknown> | null)?.[f] !== 'string',
    );
    if (missing.length > 0)
      throw new ApiError(
        400,
        `Missing required argument '${missing[0]}'.`,
        'invalid_request_error',
        missing[0],
      );
    const schema = driftSchema(tool, version, tool.responses[version], this.faults.get('schema_drift'));
    const rng = new Prng(fnv1a(JSON.stringify(args), this.seed >>> 0));
    const body = sample(schema, rng, tool.name) as Record<string, unknown>;
    const key = tool.request.required![0];
    if (key in body) body[key] = (args as Record<string, unknown>)[key];
    await new Promise((resolve) => setTimeout(resolve, this.latencyMs[version] * this.timeScale));
    return body;
  }
}
