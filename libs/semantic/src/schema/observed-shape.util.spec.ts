import fc from 'fast-check';
import { OBSERVED_SHAPE_LIMITS, ObservedShapeSchema } from '@fathom/contracts';
import { checkShapeAgainstSchema, enumPathsOf, observeBody, observeJsonShape } from './observed-shape.util';
import { DeclaredToolContract, declaredResponseSchema } from './declared-contract.util';
import type { JsonSchema } from './schema-drift.util';

const L = OBSERVED_SHAPE_LIMITS;

/** The sim's weather v1.9 and orders v2.1 response schemas (libs/sim/src/tools/tools.service.ts). */
const weather: JsonSchema = {
  type: 'object',
  properties: { city: { type: 'string' }, temp_c: { type: 'number' }, conditions: { type: 'string' } },
  required: ['city', 'temp_c', 'conditions'],
};
const orders: JsonSchema = {
  type: 'object',
  properties: {
    order_id: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'shipped'] },
    total: { $ref: '#/$defs/Money' },
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
  $defs: { Money: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] } },
};

describe(observeJsonShape.name, () => {
  it('names every path with its JSON types, merges array items and marks keys missing from some items', () => {
    const sut = observeJsonShape({
      a: 1.5,
      b: { c: 'x', d: null },
      list: [{ k: 1 }, { k: 'two', extra: true }, 3],
      empty: [],
    });
    expect(sut).toEqual({
      fields: {
        $: ['object'],
        '$.a': ['number'],
        '$.b': ['object'],
        '$.b.c': ['string'],
        '$.b.d': ['null'],
        '$.list': ['array'],
        '$.list[]': ['integer', 'object'],
        '$.list[].k': ['integer', 'string'],
        '$.list[].extra': ['boolean'],
        '$.empty': ['array'],
      },
      partial: ['$.list[].extra'],
      truncated: false,
    });
  });

  it('keeps values only at the paths asked for, distinct and capped', () => {
    const sut = observeJsonShape(
      { s: 'shipped', n: 3, list: [{ s: 'a' }, { s: 'a' }, { s: 'b'.repeat(100) }] },
      new Set(['$.s', '$.list[].s']),
    );
    expect(sut.values).toEqual({ '$.s': ['shipped'], '$.list[].s': ['a', 'b'.repeat(L.maxValueChars)] });
  });

  it('says where a limit cut the reading', () => {
    let deep: unknown = { leaf: 1 };
    for (let i = 0; i < L.maxDepth + 2; i++) deep = { next: deep };
    const sut = observeJsonShape({
      deep,
      wide: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i])),
    });
    expect(sut.truncated).toBe(true);
    expect(sut.cut).toContain('$.wide');
    expect(sut.cut!.some((p) => p.startsWith('$.deep.next'))).toBe(true);
    expect(Object.keys(sut.fields).length).toBeLessThanOrEqual(L.maxFields);
  });

  it('stays within its bounds and the wire schema whatever the JSON', () => {
    // The worst case on the wire: every path at its longest, every type, every value slot full.
    const maxChars =
      L.maxFields * (L.maxPathChars + 80) * 3 +
      L.maxValuePaths * (L.maxPathChars + L.maxValuesPerPath * (L.maxValueChars + 8));
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), fc.boolean(), (value, withValues) => {
        const paths = withValues ? new Set(Object.keys(observeJsonShape(value).fields)) : undefined;
        const shape = observeJsonShape(value, paths);
        expect(ObservedShapeSchema.safeParse(shape).success).toBe(true);
        expect(Object.keys(shape.fields).length).toBeLessThanOrEqual(L.maxFields);
        expect(Object.keys(shape.fields).every((p) => p.length <= L.maxPathChars)).toBe(true);
        expect(JSON.stringify(shape).length).toBeLessThan(maxChars);
        // Reading the same value twice gives the same shape (a consumer can compare shapes).
        expect(observeJsonShape(value, paths)).toEqual(shape);
      }),
      { numRuns: 300 },
    );
  });

  it('stays bounded on a body far past every limit (wide, deep, long keys, __proto__)', () => {
    const wide = Object.fromEntries(
      Array.from({ length: 500 }, (_, i) => [
        `${'k'.repeat(i % 7 === 0 ? 300 : 3)}${i}`,
        { nested: [i, { x: [i] }] },
      ]),
    );
    const body = JSON.parse(`{"__proto__": {"polluted": 1}, "wide": ${JSON.stringify(wide)}}`) as unknown;
    const shape = observeJsonShape(body);
    expect(ObservedShapeSchema.safeParse(shape).success).toBe(true);
    expect(Object.keys(shape.fields)).toHaveLength(L.maxFields);
    expect(shape.fields).not.toHaveProperty(['$.__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe(observeBody.name, () => {
  it.each([
    ['', false, 'empty'],
    ['  \n', false, 'empty'],
    ['<html>oops</html>', false, 'not-json'],
    ['{"a":', false, 'not-json'],
    ['{"a":1}', true, 'too-large'],
  ])('classifies %j (capped %s) as %s', (text, capped, body) => {
    expect(observeBody(text, capped)).toEqual({ body });
  });

  it('gives the shape of a JSON body', () => {
    expect(observeBody('{"a":[1]}', false)).toEqual({
      body: 'json',
      shape: { fields: { $: ['object'], '$.a': ['array'], '$.a[]': ['integer'] }, truncated: false },
    });
  });
});

describe(checkShapeAgainstSchema.name, () => {
  const kinds = (schema: JsonSchema, value: unknown) => {
    const check = checkShapeAgainstSchema(schema, observeJsonShape(value, enumPathsOf(schema)));
    return [
      ...check.violations.map((v) => `${v.kind} ${v.path}`),
      ...check.undeclared.map((p) => `undeclared ${p}`),
    ];
  };

  it('passes a conforming answer (integers where numbers are declared)', () => {
    expect(kinds(weather, { city: 'Oslo', temp_c: 11, conditions: 'rain' })).toEqual([]);
  });

  it('names a changed type, a dropped required field and a new field with their paths', () => {
    expect(kinds(weather, { city: 'Oslo', temp_c: '11', conditions: 'rain' })).toEqual([
      'type-changed $.temp_c',
    ]);
    expect(kinds(weather, { city: 'Oslo', temp_c: 11 })).toEqual(['required-removed $.conditions']);
    expect(kinds(weather, { city: 'Oslo', temp_c: 11, conditions: 'rain', region: 'x' })).toEqual([
      'undeclared $.region',
    ]);
    expect(
      kinds(
        { ...weather, additionalProperties: false },
        { city: 'Oslo', temp_c: 11, conditions: 'rain', region: 'x' },
      ),
    ).toEqual(['property-added $.region']);
  });

  it('follows $refs, array items and enums', () => {
    const ok = {
      order_id: 'o1',
      status: 'shipped',
      total: { amount: 3 },
      items: [{ sku: 'a', quantity: 1 }],
    };
    expect(kinds(orders, ok)).toEqual([]);
    expect(kinds(orders, { ...ok, total: { amount: '3' } })).toEqual(['type-changed $.total.amount']);
    expect(kinds(orders, { ...ok, status: 'lost' })).toEqual(['enum-widened $.status']);
    expect(kinds(orders, { ...ok, items: [{ sku: 'a', quantity: 1 }, { sku: 'b' }] })).toEqual([
      'required-removed $.items[].quantity',
    ]);
  });

  it('claims no missing field inside an object a limit cut', () => {
    const schema: JsonSchema = { type: 'object', properties: {}, required: ['k39'] };
    const value = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i]));
    expect(checkShapeAgainstSchema(schema, observeJsonShape(value)).violations).toEqual([]);
  });
});

describe(DeclaredToolContract.name, () => {
  const doc = (schema: JsonSchema) => ({
    openapi: '3.0.3',
    paths: {
      '/tools/weather/invoke': {
        post: { responses: { '200': { content: { 'application/json': { schema } } } } },
      },
    },
  });

  it('takes the 2xx JSON response schema of an OpenAPI document, per version with v-prefix or not', () => {
    const sut = new DeclaredToolContract(
      { responses: { 'v1.9': doc(weather), '*': orders } },
      '/tools/weather/invoke',
    );
    expect(sut.forVersion('1.9')).toEqual({ ok: true, schema: weather, root: doc(weather) });
    expect(sut.forVersion('v2.1')).toMatchObject({ ok: true, schema: orders });
    expect([...sut.valuePaths]).toEqual(['$.status']);
  });

  it('classifies a document without a usable response schema', () => {
    expect(declaredResponseSchema({ openapi: '3.0.3', paths: { '/a': {}, '/b': {} } }, '/c')).toMatchObject({
      ok: false,
    });
    expect(
      declaredResponseSchema({ openapi: '3.0.3', paths: { '/a': { get: { responses: { '404': {} } } } } }),
    ).toMatchObject({
      ok: false,
      reason: expect.stringContaining('2xx'),
    });
  });
});
