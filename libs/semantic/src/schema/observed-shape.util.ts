import {
  OBSERVED_SHAPE_LIMITS,
  type JsonTypeName,
  type ObservedShape,
  type ToolCallObservation,
} from '@fathom/contracts';
import { resolveSchemaRef, schemaTypesOf, type JsonSchema, type SchemaViolation } from './schema-drift.util';

const L = OBSERVED_SHAPE_LIMITS;

type ShapeValue = string | number | boolean | null;

/**
 * The compact shape of a parsed JSON value: every path it holds (`$.a.b`, array items merged
 * under `$.a[]`) with the JSON types seen there, which paths were missing from some of their
 * objects, and the values at `valuePaths` (paths a declared schema constrains by an enum).
 * Bounded by OBSERVED_SHAPE_LIMITS whatever the value: at most `maxFields` paths, `maxDepth`
 * levels, `maxKeysPerObject` keys and `maxArrayItems` elements read; what a limit left unread is
 * named in `cut`. Never throws on any value JSON.parse can produce. Keys containing `.` or `[]`
 * make paths that read as deeper ones (the schema diff's notation has no quoting).
 */
export function observeJsonShape(value: unknown, valuePaths?: ReadonlySet<string>): ObservedShape {
  const fields = new Map<string, Set<JsonTypeName>>();
  const seen = new Map<string, number>();
  const asObject = new Map<string, number>();
  const parentOf = new Map<string, string>();
  const values = new Map<string, ShapeValue[]>();
  const cut = new Set<string>();

  const visit = (v: unknown, path: string, parent: string | null, depth: number): void => {
    let types = fields.get(path);
    if (types === undefined) {
      if (fields.size >= L.maxFields) {
        if (parent !== null) cut.add(parent);
        return;
      }
      types = new Set();
      fields.set(path, types);
      if (parent !== null) parentOf.set(path, parent);
    }
    const type = jsonTypeOf(v);
    types.add(type);
    seen.set(path, (seen.get(path) ?? 0) + 1);
    if (valuePaths?.has(path) && type !== 'object' && type !== 'array')
      keepValue(values, path, v as ShapeValue);
    if (type === 'object') {
      asObject.set(path, (asObject.get(path) ?? 0) + 1);
      const keys = Object.keys(v as object);
      if (keys.length === 0) return;
      if (depth >= L.maxDepth || keys.length > L.maxKeysPerObject) cut.add(path);
      if (depth >= L.maxDepth) return;
      const n = Math.min(keys.length, L.maxKeysPerObject);
      for (let i = 0; i < n; i++) {
        const key = keys[i];
        const child = `${path}.${key}`;
        // `__proto__` would become a prototype, not a key, in the record the consumer rebuilds.
        if (child.length > L.maxPathChars || key === '__proto__') {
          cut.add(path);
          continue;
        }
        visit((v as Record<string, unknown>)[key], child, path, depth + 1);
      }
    } else if (type === 'array') {
      const items = v as unknown[];
      if (items.length === 0) return;
      const child = `${path}[]`;
      if (depth >= L.maxDepth || child.length > L.maxPathChars || items.length > L.maxArrayItems)
        cut.add(path);
      if (depth >= L.maxDepth || child.length > L.maxPathChars) return;
      const n = Math.min(items.length, L.maxArrayItems);
      for (let i = 0; i < n; i++) visit(items[i], child, null, depth + 1);
    }
  };
  visit(value, '$', null, 0);

  const shape: ObservedShape = { fields: {}, truncated: cut.size > 0 };
  const partial: string[] = [];
  for (const [path, types] of fields) {
    shape.fields[path] = [...types].sort();
    const parent = parentOf.get(path);
    if (parent !== undefined && (seen.get(path) ?? 0) < (asObject.get(parent) ?? 0)) partial.push(path);
  }
  if (partial.length > 0) shape.partial = partial;
  if (cut.size > 0) shape.cut = [...cut].slice(0, L.maxFields);
  if (values.size > 0) shape.values = Object.fromEntries(values);
  return shape;
}

function keepValue(values: Map<string, ShapeValue[]>, path: string, v: ShapeValue): void {
  let kept = values.get(path);
  if (kept === undefined) {
    if (values.size >= L.maxValuePaths) return;
    kept = [];
    values.set(path, kept);
  }
  const value = typeof v === 'string' ? v.slice(0, L.maxValueChars) : v;
  if (kept.length < L.maxValuesPerPath && !kept.includes(value)) kept.push(value);
}

export function jsonTypeOf(value: unknown): JsonTypeName {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'number':
      return Number.isInteger(value) ? 'integer' : 'number';
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    default:
      // undefined, functions, bigints cannot come out of JSON.parse; an object is the safe reading.
      return 'object';
  }
}

/**
 * Classifies a response body and, when it is JSON, its shape. `capped`: the driver stopped
 * reading at its body cap, so the text is a prefix and is not parsed.
 */
export function observeBody(
  text: string,
  capped: boolean,
  valuePaths?: ReadonlySet<string>,
): Pick<ToolCallObservation, 'body' | 'shape'> {
  if (capped) return { body: 'too-large' };
  if (text.trim() === '') return { body: 'empty' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { body: 'not-json' };
  }
  return { body: 'json', shape: observeJsonShape(parsed, valuePaths) };
}

/** An observed shape against a declared schema. */
export interface ShapeCheck {
  /** Ways the shape breaks the schema (same kinds and paths as `checkAgainstSchema`). */
  violations: SchemaViolation[];
  /**
   * Paths of properties the schema does not declare, where it does not forbid extras (the
   * topmost such path only): a field the tool began to send.
   */
  undeclared: string[];
}

/**
 * Checks an observed shape against the declared response schema (`root` resolves local `$ref`s).
 * A required property counts as missing when its object was read in full and the property is
 * absent, or absent from some of the objects (`partial`). `oneOf`/`anyOf`/`allOf` nodes without
 * a `type` are not looked into (any shape passes them).
 */
export function checkShapeAgainstSchema(
  schema: JsonSchema,
  shape: ObservedShape,
  root: JsonSchema = schema,
): ShapeCheck {
  const out: ShapeCheck = { violations: [], undeclared: [] };
  const partial = new Set(shape.partial ?? []);
  const cut = new Set(shape.cut ?? []);
  const children = new Map<string, string[]>();
  for (const path of Object.keys(shape.fields)) {
    if (path.endsWith('[]')) continue;
    const dot = path.lastIndexOf('.');
    if (dot <= 0) continue;
    const parent = path.slice(0, dot);
    if (!(parent in shape.fields)) continue;
    let list = children.get(parent);
    if (list === undefined) children.set(parent, (list = []));
    list.push(path.slice(dot + 1));
  }

  const walk = (node: JsonSchema, path: string, depth: number): void => {
    const observed = shape.fields[path];
    if (observed === undefined || depth > 64) return;
    const s = resolveSchemaRef(node, root);
    const declared = schemaTypesOf(s);
    if (declared !== null) {
      const wrong = observed.filter((t) => !declared.has(t) && !(t === 'integer' && declared.has('number')));
      if (wrong.length > 0) {
        out.violations.push({
          kind: 'type-changed',
          path,
          expected: [...declared].sort(),
          observed: wrong.join('|'),
        });
        return;
      }
    }
    const allowed = Array.isArray(s['enum']) ? (s['enum'] as unknown[]) : null;
    const values = shape.values?.[path];
    if (allowed !== null && values !== undefined) {
      const outside = values.filter((v) => !allowed.some((a) => a === v));
      if (outside.length > 0)
        out.violations.push({ kind: 'enum-widened', path, expected: allowed, observed: outside });
    }
    if (observed.includes('object')) {
      const props = isObject(s['properties']) ? s['properties'] : {};
      const required = Array.isArray(s['required'])
        ? s['required'].filter((r): r is string => typeof r === 'string')
        : [];
      for (const name of required) {
        const child = `${path}.${name}`;
        if (!cut.has(path) && (!(child in shape.fields) || partial.has(child)))
          out.violations.push({
            kind: 'required-removed',
            path: child,
            expected: 'present',
            observed: 'absent',
          });
      }
      for (const name of children.get(path) ?? []) {
        const child = `${path}.${name}`;
        if (Object.prototype.hasOwnProperty.call(props, name) && isObject(props[name]))
          walk(props[name], child, depth + 1);
        else if (s['additionalProperties'] === false)
          out.violations.push({
            kind: 'property-added',
            path: child,
            expected: 'absent',
            observed: shape.fields[child].join('|'),
          });
        else if (s['additionalProperties'] === undefined && isObject(s['properties']))
          out.undeclared.push(child);
      }
    }
    if (observed.includes('array') && isObject(s['items'])) walk(s['items'], `${path}[]`, depth + 1);
  };
  walk(schema, '$', 0);
  return out;
}

/** Paths where the schema constrains values by an enum: the paths whose values a shape keeps. */
export function enumPathsOf(schema: JsonSchema, root: JsonSchema = schema): Set<string> {
  const paths = new Set<string>();
  const walk = (node: JsonSchema, path: string, depth: number): void => {
    if (depth > L.maxDepth + 1 || paths.size >= L.maxValuePaths) return;
    const s = resolveSchemaRef(node, root);
    if (Array.isArray(s['enum'])) paths.add(path);
    if (isObject(s['properties']))
      for (const [name, child] of Object.entries(s['properties']))
        if (isObject(child)) walk(child, `${path}.${name}`, depth + 1);
    if (isObject(s['items'])) walk(s['items'], `${path}[]`, depth + 1);
  };
  walk(schema, '$', 0);
  return paths;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
