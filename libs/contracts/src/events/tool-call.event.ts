import { HeadersSchema, RequestPathSchema } from '../campaign/secret.schema';
import { z } from 'zod';

/**
 * Tool contracts (spec, anomaly class 4): what a campaign declares a tool answers, and what the
 * load engine saw it answer. The observed side is a shape (JSON paths and their types), never
 * the body, bounded by `OBSERVED_SHAPE_LIMITS` so a record stays small whatever the tool sends.
 */
export const OBSERVED_SHAPE_LIMITS = {
  /** Object/array nesting read below the root; deeper values are not read (`truncated`). */
  maxDepth: 8,
  /** Paths kept per shape. */
  maxFields: 64,
  /** Keys read per object. */
  maxKeysPerObject: 32,
  /** Elements read per array (their item shapes are merged under `[]`). */
  maxArrayItems: 8,
  /** Characters per path; a key that would make a longer path is not read. */
  maxPathChars: 160,
  /** Paths whose values are kept (the declared enums), values per path, characters per value. */
  maxValuePaths: 16,
  maxValuesPerPath: 8,
  maxValueChars: 64,
} as const;

export const JsonTypeNameSchema = z.enum([
  'object',
  'array',
  'string',
  'number',
  'integer',
  'boolean',
  'null',
]);
export type JsonTypeName = z.infer<typeof JsonTypeNameSchema>;

const L = OBSERVED_SHAPE_LIMITS;
const shapePath = z.string().min(1).max(L.maxPathChars);
const boundedRecord = <V extends z.ZodType>(value: V, max: number) =>
  z.record(shapePath, value).refine((r) => Object.keys(r).length <= max, { message: `at most ${max} paths` });

/**
 * The observed shape of one JSON body. `fields`: JSON path (`$`, `$.a.b`, `$.items[]`,
 * `$.items[].sku`, the notation of `@fathom/semantic`'s schema diff) -> the JSON types seen there
 * (`integer` for whole numbers). A path is present when it is a key of `fields`; `partial` lists
 * paths that were missing from some of the objects they belong to (array elements differ).
 * `values`: the distinct values seen at the paths a declared schema constrains with an enum.
 */
export const ObservedShapeSchema = z.object({
  fields: boundedRecord(z.array(JsonTypeNameSchema).min(1).max(7), L.maxFields),
  partial: z.array(shapePath).max(L.maxFields).optional(),
  values: boundedRecord(
    z
      .array(z.union([z.string().max(L.maxValueChars), z.number(), z.boolean(), z.null()]))
      .max(L.maxValuesPerPath),
    L.maxValuePaths,
  ).optional(),
  /**
   * Object and array paths whose content was not read in full (depth, keys, elements or the path
   * budget ran out): a path missing below one of them may exist in the body.
   */
  cut: z.array(shapePath).max(L.maxFields).optional(),
  /** A limit stopped the reading somewhere (`cut` says where). */
  truncated: z.boolean(),
});
export type ObservedShape = z.infer<typeof ObservedShapeSchema>;

/**
 * One call of a tool inside a request (a tool-chain tool call, or an HTTP step on a tool).
 * `body` classifies what came back: `json` (then `shape` is set), `not-json`, `empty`,
 * `too-large` (over the driver's body cap, not parsed), `no-response` (transport error, timeout).
 */
export const ToolCallObservationSchema = z.object({
  tool: z.string().min(1).max(64),
  /** The version that answered: the target's `x-tool-version` header, else the declared one, else `unknown`. */
  version: z.string().min(1).max(32),
  status: z.number().int(),
  body: z.enum(['json', 'not-json', 'empty', 'too-large', 'no-response']),
  shape: ObservedShapeSchema.optional(),
  /** This call went to the fallback instance because the main one failed its contract or timed out. */
  fallback: z.boolean().optional(),
  /** This (main path) call was replaced by a fallback call. */
  fallbackTriggered: z.boolean().optional(),
});
export type ToolCallObservation = z.infer<typeof ToolCallObservationSchema>;

/** Tool calls recorded per request (a chain of `maxSteps` with several calls each stays within). */
export const MAX_TOOL_CALLS_PER_RECORD = 32;

const versionKey = z.string().regex(/^[\w.*-]{1,32}$/, 'a version such as v1.9, or * for any');

/**
 * A declared tool contract: the response schema per version, each a JSON Schema object or an
 * OpenAPI 3 document (its 2xx `application/json` response schema is taken, `$ref`s resolved in
 * the document), e.g. the target's own `openapi.json` pinned when the contract was agreed.
 */
export const ToolContractSchema = z
  .object({
    /** The tool's name in drift signals and reports; default: the tool's (or step's) name. */
    tool: z
      .string()
      .regex(/^[\w.-]{1,64}$/)
      .optional(),
    /** The version asked for, used when the response does not name its version (`x-tool-version`). */
    version: versionKey.optional(),
    /** Version (`v1.9`, or `*` for any) -> declared response schema or OpenAPI document. */
    responses: z
      .record(versionKey, z.record(z.string(), z.unknown()))
      .refine((r) => Object.keys(r).length > 0, { message: 'declare at least one version' }),
  })
  .strict();
export type ToolContract = z.infer<typeof ToolContractSchema>;

/**
 * Fallback to an older tool instance (spec: a request that wants v2.1 gets v1.9 when the v2.1
 * contract is incompatible, with a timeout 200 ms above the main path's 800 ms).
 */
export const ToolFallbackSchema = z
  .object({
    /** Headers that route to the fallback instance, e.g. `{"x-tool-version": "v1.9"}`. */
    headers: HeadersSchema.default({}),
    /** Default: the tool's own invokePath. */
    invokePath: RequestPathSchema.optional(),
    /** Timeout of the fallback call; default: the main call's `timeoutMs` + 200 ms (spec). */
    timeoutMs: z.number().int().positive().optional(),
  })
  .strict();
export type ToolFallback = z.infer<typeof ToolFallbackSchema>;
