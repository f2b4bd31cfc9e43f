/**
 * Tool schema drift (spec, anomaly class 4): what changed between two versions of a tool's
 * response schema (JSON Schema / OpenAPI 3 schema objects), and where an observed response
 * breaks its declared schema. Every change carries the JSON path it is at (`$.items[].name`).
 *
 * Understood keywords: `type` (string or array; OpenAPI `nullable`), `properties`, `required`,
 * `items`, `enum`, `additionalProperties: false`, local `$ref`s (`#/components/schemas/X`,
 * `#/$defs/X`) resolved against the document passed as `root`. `oneOf`/`anyOf`/`allOf` are
 * compared as a whole (any difference is one `composition-changed`), not branch by branch.
 */
export type SchemaChangeKind =
  | 'type-changed'
  | 'required-added'
  | 'required-removed'
  | 'enum-narrowed'
  | 'enum-widened'
  | 'property-added'
  | 'property-removed'
  | 'composition-changed';

export interface SchemaChange {
  kind: SchemaChangeKind;
  path: string;
  /** Breaks existing consumers of the response (a client written against `before`). */
  breaking: boolean;
  before: unknown;
  after: unknown;
}

export type JsonSchema = Record<string, unknown>;

/** Changes from `before` to `after`, in path order. */
export function diffSchemas(
  before: JsonSchema,
  after: JsonSchema,
  roots: { before?: JsonSchema; after?: JsonSchema } = {},
): SchemaChange[] {
  const changes: SchemaChange[] = [];
  walk(
    resolve(before, roots.before ?? before),
    resolve(after, roots.after ?? after),
    '$',
    changes,
    roots.before ?? before,
    roots.after ?? after,
    0,
    new WeakMap(),
  );
  return changes;
}

const MAX_DEPTH = 64; // recursive $refs stop here

function walk(
  a: JsonSchema,
  b: JsonSchema,
  path: string,
  out: SchemaChange[],
  rootA: JsonSchema,
  rootB: JsonSchema,
  depth: number,
  walked: WeakMap<JsonSchema, WeakSet<JsonSchema>>,
): void {
  if (depth > MAX_DEPTH) return;
  // Each pair of schema objects is compared once: a recursive schema whose object refers to
  // itself from two properties otherwise branches 2^64 times before MAX_DEPTH stops it.
  const pairs = walked.get(a) ?? new WeakSet<JsonSchema>();
  if (pairs.has(b)) return;
  pairs.add(b);
  walked.set(a, pairs);
  const typesA = typesOf(a);
  const typesB = typesOf(b);
  if (typesA !== null && typesB !== null && !sameSet(typesA, typesB)) {
    // A response type that only gained `null` breaks consumers too: they now see a null.
    out.push({
      kind: 'type-changed',
      path,
      breaking: true,
      before: [...typesA].sort(),
      after: [...typesB].sort(),
    });
  }
  for (const key of ['oneOf', 'anyOf', 'allOf']) {
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) {
      out.push({
        kind: 'composition-changed',
        path,
        breaking: true,
        before: a[key] ?? null,
        after: b[key] ?? null,
      });
    }
  }
  const enumA = Array.isArray(a['enum']) ? (a['enum'] as unknown[]) : null;
  const enumB = Array.isArray(b['enum']) ? (b['enum'] as unknown[]) : null;
  if (enumA !== null || enumB !== null) {
    const keysA = new Set((enumA ?? []).map((v) => JSON.stringify(v)));
    const keysB = new Set((enumB ?? []).map((v) => JSON.stringify(v)));
    const removed = enumA === null ? [] : enumA.filter((v) => !keysB.has(JSON.stringify(v)));
    const added = enumB === null ? [] : enumB.filter((v) => !keysA.has(JSON.stringify(v)));
    // For a response, new values break clients (an unknown value arrives); removed values
    // narrow what arrives: reported, not breaking for readers, breaking for writers/fallbacks.
    if (enumB !== null && (enumA === null || removed.length > 0)) {
      out.push({ kind: 'enum-narrowed', path, breaking: false, before: enumA, after: enumB });
    }
    if (enumA !== null && (enumB === null || added.length > 0)) {
      out.push({ kind: 'enum-widened', path, breaking: true, before: enumA, after: enumB });
    }
  }

  const propsA = objectOf(a['properties']);
  const propsB = objectOf(b['properties']);
  const reqA = new Set(stringsOf(a['required']));
  const reqB = new Set(stringsOf(b['required']));
  for (const name of reqB)
    if (!reqA.has(name))
      out.push({
        kind: 'required-added',
        path: `${path}.${name}`,
        breaking: false,
        before: false,
        after: true,
      });
  for (const name of reqA)
    if (!reqB.has(name))
      out.push({
        kind: 'required-removed',
        path: `${path}.${name}`,
        breaking: true,
        before: true,
        after: false,
      });
  for (const name of Object.keys(propsA)) {
    const child = `${path}.${name}`;
    if (!Object.hasOwn(propsB, name))
      out.push({
        kind: 'property-removed',
        path: child,
        breaking: reqA.has(name),
        before: propsA[name],
        after: null,
      });
    else
      walk(
        resolve(objectOf(propsA[name]), rootA),
        resolve(objectOf(propsB[name]), rootB),
        child,
        out,
        rootA,
        rootB,
        depth + 1,
        walked,
      );
  }
  for (const name of Object.keys(propsB)) {
    if (!Object.hasOwn(propsA, name))
      out.push({
        kind: 'property-added',
        path: `${path}.${name}`,
        breaking: false,
        before: null,
        after: propsB[name],
      });
  }
  const itemsA = a['items'];
  const itemsB = b['items'];
  if (isObject(itemsA) && isObject(itemsB))
    walk(resolve(itemsA, rootA), resolve(itemsB, rootB), `${path}[]`, out, rootA, rootB, depth + 1, walked);
}

/** One way an observed value breaks its declared schema. */
export interface SchemaViolation {
  kind: 'type-changed' | 'required-removed' | 'property-added' | 'enum-widened';
  path: string;
  expected: unknown;
  observed: unknown;
}

/**
 * Checks one observed response against the declared schema. The kinds read as drift of the
 * live contract: a value of another type (`type-changed`), a required field missing
 * (`required-removed`), a field the schema does not declare where it forbids extras
 * (`property-added`), a value outside the enum (`enum-widened`).
 */
export function checkAgainstSchema(
  schema: JsonSchema,
  value: unknown,
  root: JsonSchema = schema,
): SchemaViolation[] {
  const out: SchemaViolation[] = [];
  check(resolve(schema, root), value, '$', out, root, 0);
  return out;
}

function check(
  schema: JsonSchema,
  value: unknown,
  path: string,
  out: SchemaViolation[],
  root: JsonSchema,
  depth: number,
): void {
  if (depth > MAX_DEPTH) return;
  const types = typesOf(schema);
  const actual = jsonType(value);
  if (types !== null && !types.has(actual) && !(actual === 'integer' && types.has('number'))) {
    out.push({
      kind: 'type-changed',
      path,
      expected: [...types].sort(),
      observed: actual === 'integer' ? 'integer' : actual,
    });
    return;
  }
  if (
    Array.isArray(schema['enum']) &&
    !(schema['enum'] as unknown[]).some((v) => JSON.stringify(v) === JSON.stringify(value))
  ) {
    out.push({ kind: 'enum-widened', path, expected: schema['enum'], observed: value });
  }
  if (isObject(value)) {
    const props = objectOf(schema['properties']);
    for (const name of stringsOf(schema['required'])) {
      if (!(name in value))
        out.push({
          kind: 'required-removed',
          path: `${path}.${name}`,
          expected: 'present',
          observed: 'absent',
        });
    }
    for (const [name, child] of Object.entries(value)) {
      if (Object.hasOwn(props, name))
        check(resolve(objectOf(props[name]), root), child, `${path}.${name}`, out, root, depth + 1);
      else if (schema['additionalProperties'] === false)
        out.push({
          kind: 'property-added',
          path: `${path}.${name}`,
          expected: 'absent',
          observed: jsonType(child),
        });
    }
  } else if (Array.isArray(value) && isObject(schema['items'])) {
    const items = resolve(schema['items'], root);
    value.forEach((item) => check(items, item, `${path}[]`, out, root, depth + 1));
  }
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value; // string, boolean, object
}

function typesOf(schema: JsonSchema): Set<string> | null {
  const t = schema['type'];
  let types: Set<string> | null = null;
  if (typeof t === 'string') types = new Set([t]);
  else if (Array.isArray(t)) types = new Set(t.filter((x): x is string => typeof x === 'string'));
  if (types !== null && schema['nullable'] === true) types.add('null');
  return types;
}

function resolve(schema: JsonSchema, root: JsonSchema): JsonSchema {
  // A boolean schema, null, or anything else a declared document may hold: no constraint known.
  if (!isObject(schema)) return {};
  let current = schema;
  for (let hops = 0; hops < 16 && typeof current['$ref'] === 'string'; hops++) {
    const ref = current['$ref'] as string;
    if (!ref.startsWith('#/')) break;
    let target: unknown = root;
    for (const part of ref.slice(2).split('/')) {
      target = isObject(target) ? target[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    }
    if (!isObject(target)) break;
    current = target;
  }
  return current;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function objectOf(value: unknown): Record<string, unknown> {
  return isObject(value) ? value : {};
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((x): x is string => typeof x === 'string') : [];
}

function sameSet(a: Set<string>, b: Set<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

/** For the observed-shape check: the same `$ref` resolution and `type` reading as the diff. */
export { resolve as resolveSchemaRef, typesOf as schemaTypesOf };
