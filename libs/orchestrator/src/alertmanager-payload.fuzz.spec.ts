import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { fuzzParser } from '@fathom/testing';
import { AlertmanagerPayloadSchema, labelsMatch, FieldValidationError, parseFields } from '@fathom/contracts';

/** Whatever an Alertmanager (or anyone holding its secret) posts: a payload or a 400, never a throw. */
describe('Alertmanager payloads against hostile input', () => {
  const fixture = JSON.parse(
    readFileSync(
      join(
        __dirname,
        '..',
        '..',
        '..',
        'test',
        'integration',
        'orchestrator',
        '__fixtures__',
        'alertmanager',
        'firing.v4.json',
      ),
      'utf8',
    ),
  ) as Record<string, unknown>;
  const alert = (fixture.alerts as Record<string, unknown>[])[0];
  const anyValue = fc.jsonValue({ maxDepth: 3 });
  const key = fc.constantFrom(
    ...Object.keys(fixture),
    ...Object.keys(alert),
    '__proto__',
    'constructor',
    'toString',
    'notification_reason',
  );
  const mutatedAlert = fc
    .array(fc.tuple(key, fc.oneof(anyValue, fc.constant(undefined))), { maxLength: 4 })
    .map((edits) =>
      Object.assign(JSON.parse(JSON.stringify(alert)) as Record<string, unknown>, Object.fromEntries(edits)),
    );
  const payload = fc.oneof(
    { weight: 1, arbitrary: anyValue },
    {
      weight: 4,
      arbitrary: fc
        .tuple(
          fc.array(fc.tuple(key, fc.oneof(anyValue, fc.constant(undefined))), { maxLength: 4 }),
          fc.array(mutatedAlert, { maxLength: 4 }),
        )
        .map(([edits, alerts]) => ({ ...fixture, alerts, ...Object.fromEntries(edits) })),
    },
    // What a JSON body parser hands over for `{"__proto__": ...}`: an own property, not a prototype.
    {
      weight: 1,
      arbitrary: anyValue.map((v) => JSON.parse(`{"__proto__": ${JSON.stringify(v ?? null)}}`) as unknown),
    },
  );

  it('parse and match: 10,000 seeded cases', () => {
    const report = fuzzParser(
      payload,
      (body) => {
        const parsed = parseFields(AlertmanagerPayloadSchema, body, 'Alertmanager payload');
        return parsed.alerts.filter((a) => labelsMatch({ alertname: 'LlmP99LatencyHigh' }, a.labels)).length;
      },
      { seed: 1405, refusal: (error) => error instanceof FieldValidationError },
    );
    expect(report.cases).toBe(10_000);
    expect(report.refused).toBeGreaterThan(0);
    expect(report.refused).toBeLessThan(10_000);
  });
});
