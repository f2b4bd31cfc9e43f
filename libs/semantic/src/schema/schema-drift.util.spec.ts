import { checkAgainstSchema, diffSchemas, type JsonSchema } from './schema-drift.util';
import { ToolContractTracker } from './tool-contract.tracker';

const v1: JsonSchema = {
  type: 'object',
  required: ['city', 'temperature'],
  properties: {
    city: { type: 'string' },
    temperature: { type: 'number' },
    units: { type: 'string', enum: ['c', 'f', 'k'] },
    readings: { type: 'array', items: { $ref: '#/components/schemas/Reading' } },
  },
  components: {
    schemas: {
      Reading: {
        type: 'object',
        required: ['at'],
        properties: { at: { type: 'string' }, value: { type: 'number' } },
      },
    },
  },
};

describe(diffSchemas.name, () => {
  it('finds no change between identical versions', () => {
    expect(diffSchemas(v1, structuredClone(v1))).toEqual([]);
  });

  it('reports type changes, required added/removed and a narrowed enum with their paths', () => {
    const v2 = structuredClone(v1) as {
      required: string[];
      properties: Record<string, JsonSchema>;
      components: { schemas: { Reading: JsonSchema } };
    };
    v2.required = ['city', 'units'];
    v2.properties['temperature'] = { type: 'string' };
    v2.properties['units'] = { type: 'string', enum: ['c', 'f'] };
    v2.components.schemas.Reading = {
      type: 'object',
      required: ['at'],
      properties: { at: { type: 'integer' }, value: { type: 'number' } },
    };
    const changes = diffSchemas(v1, v2 as unknown as JsonSchema).map(
      (c) => `${c.kind} ${c.path} ${c.breaking}`,
    );
    expect(changes.sort()).toEqual(
      [
        'required-added $.units false',
        'required-removed $.temperature true',
        'type-changed $.temperature true',
        'enum-narrowed $.units false',
        'type-changed $.readings[].at true',
      ].sort(),
    );
  });

  it('reports added and removed properties, and a type that became nullable', () => {
    const changes = diffSchemas(
      { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } } },
      { type: 'object', properties: { a: { type: 'string', nullable: true }, c: { type: 'string' } } },
    );
    expect(changes.map((c) => `${c.kind} ${c.path}`)).toEqual([
      'type-changed $.a',
      'property-removed $.b',
      'property-added $.c',
    ]);
  });
});

describe(checkAgainstSchema.name, () => {
  it('passes a conforming response', () => {
    expect(
      checkAgainstSchema(v1, {
        city: 'Edinburgh',
        temperature: 11,
        units: 'c',
        readings: [{ at: 'now', value: 1 }],
      }),
    ).toEqual([]);
  });

  it('reports each way an observed response breaks the declared schema, with its path', () => {
    const violations = checkAgainstSchema(
      { ...v1, additionalProperties: false },
      { city: 7, units: 'x', readings: [{ value: 'hot' }], extra: true },
    );
    expect(violations.map((v) => `${v.kind} ${v.path}`).sort()).toEqual(
      [
        'type-changed $.city',
        'required-removed $.temperature',
        'enum-widened $.units',
        'required-removed $.readings[].at',
        'type-changed $.readings[].value',
        'property-added $.extra',
      ].sort(),
    );
  });
});

describe(ToolContractTracker.name, () => {
  it('computes contract pass rate (over judged calls) and fallback trigger rate per tool and version', () => {
    const sut = new ToolContractTracker();
    for (let i = 0; i < 10; i++)
      sut.record({ tool: 'weather', version: '2.1', contractPassed: i < 7, fallbackTriggered: i >= 7 });
    sut.record({ tool: 'weather', version: '1.9', contractPassed: true, fallbackTriggered: false });
    sut.record({ tool: 'weather', version: '1.9', contractPassed: null, fallbackTriggered: false });
    sut.record({ tool: 'orders', version: 'unknown', contractPassed: null, fallbackTriggered: true });
    expect(sut.stats()).toEqual([
      {
        tool: 'orders',
        version: 'unknown',
        calls: 1,
        checked: 0,
        contractPassRate: null,
        fallbackTriggerRate: 1,
      },
      { tool: 'weather', version: '1.9', calls: 2, checked: 1, contractPassRate: 1, fallbackTriggerRate: 0 },
      {
        tool: 'weather',
        version: '2.1',
        calls: 10,
        checked: 10,
        contractPassRate: 0.7,
        fallbackTriggerRate: 0.3,
      },
    ]);
  });
});
