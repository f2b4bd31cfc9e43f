import { Detectors } from '@fathom/contracts';
import {
  CampaignSpecSchema,
  type RequestRecord,
  type RequestTelemetry,
  type ToolCallObservation,
} from '@fathom/contracts';
import { observeJsonShape } from '@fathom/semantic';
import { REQUIRED_ADDED_MIN_CALLS, ToolContractWatch } from './tool-contract.watch';

const weather = {
  type: 'object',
  properties: { city: { type: 'string' }, temp_c: { type: 'number' } },
  required: ['city', 'temp_c'],
};
const spec = (responses: Record<string, unknown>) =>
  CampaignSpecSchema.parse({
    name: 'w',
    target: { baseUrl: 'http://127.0.0.1:1' },
    scenario: {
      type: 'http',
      steps: [{ name: 'w', method: 'POST', path: '/tools/weather/invoke', contract: { responses } }],
    },
    load: { concurrency: 1, durationMs: 100 },
  });
const batch = {
  id: 'b',
  schemaVersion: 1,
  campaignId: 'c',
  runId: 'r',
  emittedAt: 0,
  generatorId: 'g',
  records: [],
} as unknown as RequestTelemetry;
let n = 0;
const record = (...calls: ToolCallObservation[]) =>
  ({ requestId: `q${n++}`, toolCalls: calls }) as unknown as RequestRecord;
const answer = (body: unknown, extra: Partial<ToolCallObservation> = {}): ToolCallObservation => ({
  tool: 'weather',
  version: 'v1.9',
  status: 200,
  body: 'json',
  shape: observeJsonShape(body),
  ...extra,
});

describe(ToolContractWatch.name, () => {
  it('holds records that arrive before the campaign, then judges them', () => {
    const sut = new ToolContractWatch();
    expect(sut.observe(batch, record(answer({ city: 'a', temp_c: 'hot' })))).toEqual([]);
    sut.declare('c', 'r', spec({ '1.9': weather }));
    const signals = sut.observe(batch, record(answer({ city: 'a', temp_c: 1 })));
    expect(signals.map((s) => [s.detector, s.labels, s.severity])).toEqual([
      [
        'schema-drift',
        { tool: 'weather', version: 'v1.9', path: '$.temp_c', change: 'type-changed' },
        'critical',
      ],
    ]);
    expect(sut.figures('r')).toMatchObject({
      'tool.weather@v1.9.checked': 2,
      'tool.weather@v1.9.contractPassRate': 0.5,
    });
  });

  it('reports each path once per run, tool and version', () => {
    const sut = new ToolContractWatch();
    sut.declare('c', 'r', spec({ '*': weather }));
    const drifted = () =>
      sut.observe(batch, record(answer({ city: 'a' }), answer({ city: 'a' }, { version: 'v2.1' })));
    expect(drifted().map((s) => `${s.labels?.version} ${s.labels?.path} ${s.labels?.change}`)).toEqual([
      'v1.9 $.temp_c required-removed',
      'v2.1 $.temp_c required-removed',
    ]);
    expect(drifted()).toEqual([]);
    expect(sut.figures('r')['tool.weather@v1.9.driftedPaths']).toBe(1);
  });

  it(`tells a new required field (in all of ${REQUIRED_ADDED_MIN_CALLS} answers) from a new optional one`, () => {
    const sut = new ToolContractWatch();
    sut.declare('c', 'r', spec({ 'v1.9': weather }));
    const out = [];
    for (let i = 0; i < REQUIRED_ADDED_MIN_CALLS; i++)
      out.push(
        ...sut.observe(
          batch,
          record(answer({ city: 'a', temp_c: 1, region: 'x', ...(i === 1 ? {} : { note: 'n' }) })),
        ),
      );
    expect(out.map((s) => `${s.labels?.path} ${s.labels?.change} ${s.severity}`)).toEqual([
      '$.region required-added warning',
      '$.note property-added warning',
    ]);
    expect(sut.figures('r')['tool.weather@v1.9.contractPassRate']).toBe(1);
  });

  it('classifies a non-JSON answer, a failed call, an undeclared version and an unusable contract', () => {
    const sut = new ToolContractWatch();
    sut.declare('c', 'r', spec({ 'v1.9': weather, 'v3.0': { openapi: '3.0.3', paths: {} } }));
    const signals = sut.observe(
      batch,
      record(
        { tool: 'weather', version: 'v1.9', status: 200, body: 'not-json' },
        {
          tool: 'weather',
          version: 'v1.9',
          status: 503,
          body: 'json',
          shape: observeJsonShape({ error: 'busy' }),
        },
        { tool: 'weather', version: 'unknown', status: 0, body: 'no-response', fallbackTriggered: true },
        answer({}, { version: 'v2.1' }),
        answer({}, { version: 'v3.0' }),
      ),
    );
    expect(
      signals.map((s) => `${s.detector} ${s.labels?.version} ${s.labels?.path} ${s.labels?.change}`),
    ).toEqual(['schema-drift v1.9 $ type-changed', `${Detectors.toolContractUnusable} v3.0 $ undefined`]);
    expect(sut.figures('r')).toEqual({
      'tool.weather@unknown.calls': 1,
      'tool.weather@unknown.checked': 0,
      'tool.weather@unknown.fallbackTriggerRate': 1,
      'tool.weather@unknown.driftedPaths': 0,
      'tool.weather@v1.9.calls': 2,
      'tool.weather@v1.9.checked': 1,
      'tool.weather@v1.9.contractPassRate': 0,
      'tool.weather@v1.9.fallbackTriggerRate': 0,
      'tool.weather@v1.9.driftedPaths': 1,
      'tool.weather@v2.1.calls': 1,
      'tool.weather@v2.1.checked': 0,
      'tool.weather@v2.1.fallbackTriggerRate': 0,
      'tool.weather@v2.1.driftedPaths': 0,
      'tool.weather@v3.0.calls': 1,
      'tool.weather@v3.0.checked': 0,
      'tool.weather@v3.0.fallbackTriggerRate': 0,
      'tool.weather@v3.0.driftedPaths': 0,
    });
  });
});
