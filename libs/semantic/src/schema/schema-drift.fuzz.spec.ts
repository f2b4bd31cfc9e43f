import fc from 'fast-check';
import { fuzzParser } from '@fathom/testing';
import { diffSchemas, type JsonSchema } from './schema-drift.util';

/**
 * Two versions of a tool's OpenAPI/JSON Schema document, as a campaign declares them: any pair,
 * self-referencing `$ref`s, wrong types and dangling references included, gives a list of
 * changes: no throw, no endless walk.
 */
describe('OpenAPI schema diff against hostile documents', () => {
  const A = '#/components/schemas/A';
  const B = '#/components/schemas/B';
  // Small parts, combined below: cheap to generate, so 10,000 cases stay quick.
  const leaves: unknown[] = [
    null,
    true,
    false,
    0,
    'string',
    [],
    {},
    { type: 'string' },
    { type: ['string', 'null'] },
    { type: 'integer', nullable: true },
    { type: 'nonsense' },
    { type: 42 },
    { enum: ['a', 'b'] },
    { enum: 'a' },
    { enum: [null, { x: 1 }] },
    { $ref: A },
    { $ref: B },
    { $ref: '#/$defs/A' },
    { $ref: '#/nope' },
    { $ref: 'http://x/y' },
    { $ref: '#' },
    { $ref: 7 },
    { required: 'a' },
    { required: ['a', 'z'] },
    { properties: null },
    { properties: [] },
    { items: null },
    { oneOf: [{ $ref: A }] },
    { additionalProperties: { $ref: A } },
    { type: 'object', properties: { constructor: { $ref: A }, __proto__: { type: 'string' } } },
  ];
  const leaf = fc.constantFrom(...leaves);
  const name = fc.constantFrom('a', 'b', 'c', 'constructor', 'toString', '__proto__');
  const node = fc.oneof(
    leaf,
    fc.record(
      {
        type: fc.constantFrom('object', 'array', ['object', 'null']),
        properties: fc.dictionary(name, leaf, { maxKeys: 3 }),
        required: fc.array(name, { maxLength: 3 }),
        items: leaf,
        enum: fc.array(leaf, { maxLength: 3 }),
      },
      { requiredKeys: [] },
    ),
  );
  const document = fc.record({
    root: node,
    components: fc.record({ schemas: fc.record({ A: node, B: node }) }),
    $defs: fc.record({ A: node }),
  });

  it('diffSchemas: 10,000 seeded pairs of documents', () => {
    const report = fuzzParser(
      fc.tuple(document, document),
      ([before, after]) =>
        diffSchemas(before.root as JsonSchema, after.root as JsonSchema, {
          before: before as unknown as JsonSchema,
          after: after as unknown as JsonSchema,
        }),
      {
        seed: 1407,
        refusal: () => false,
        check: (_input, changes) => expect(Array.isArray(changes)).toBe(true),
      },
    );
    expect(report.cases).toBe(10_000);
  });

  it('compares a schema that refers to itself from two places once per pair, not 2^64 times', () => {
    const tree = (ref: string) => ({
      type: 'object',
      properties: { left: { $ref: ref }, right: { $ref: ref }, value: { type: 'string' } },
    });
    const before = { components: { schemas: { A: tree('#/components/schemas/A') } } };
    const after = {
      components: { schemas: { A: { ...tree('#/components/schemas/A'), required: ['value'] } } },
    };
    const started = performance.now();
    const changes = diffSchemas(
      { $ref: '#/components/schemas/A' },
      { $ref: '#/components/schemas/A' },
      { before, after },
    );
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(changes).toContainEqual(expect.objectContaining({ kind: 'required-added', path: '$.value' }));
  });

  it('takes null, booleans and other non-objects as "no constraint known"', () => {
    expect(() => diffSchemas(null as unknown as JsonSchema, { type: 'string' })).not.toThrow();
    expect(() => diffSchemas(true as unknown as JsonSchema, false as unknown as JsonSchema)).not.toThrow();
  });
});
