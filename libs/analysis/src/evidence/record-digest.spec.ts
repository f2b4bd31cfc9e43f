import type { CampaignSpec, ToolCallObservation } from '@fathom/contracts';
import { judgeToolCalls, workflowDigestOf } from './record-digest';

const weatherV19 = {
  type: 'object',
  properties: { city: { type: 'string' }, temp_c: { type: 'number' } },
  required: ['city', 'temp_c'],
};
const spec = {
  target: { baseUrl: 'http://127.0.0.1:1' },
  scenario: {
    type: 'http',
    steps: [
      {
        name: 'weather',
        method: 'POST',
        path: '/tools/weather/invoke',
        contract: { responses: { 'v1.9': weatherV19 } },
      },
    ],
  },
} as unknown as CampaignSpec;

const call = (extra: Partial<ToolCallObservation>): ToolCallObservation => ({
  tool: 'weather',
  version: 'v1.9',
  status: 200,
  body: 'json',
  shape: { fields: { $: ['object'], '$.city': ['string'], '$.temp_c': ['number'] }, truncated: false },
  ...extra,
});

describe(judgeToolCalls.name, () => {
  it('passes an answer that keeps the declared contract of its version', () => {
    expect(judgeToolCalls([call({})], spec)).toEqual([
      { tool: 'weather', version: 'v1.9', contractPassed: true, fallback: false, fallbackTriggered: false },
    ]);
  });

  it('fails a changed type, a dropped required field and a non-JSON answer', () => {
    const sut = judgeToolCalls(
      [
        call({
          shape: {
            fields: { $: ['object'], '$.city': ['string'], '$.temp_c': ['string'] },
            truncated: false,
          },
        }),
        call({ shape: { fields: { $: ['object'], '$.city': ['string'] }, truncated: false } }),
        call({ body: 'not-json', shape: undefined }),
      ],
      spec,
    );
    expect(sut.map((c) => c.contractPassed)).toEqual([false, false, false]);
  });

  it('does not judge a version without a contract, a failed call or one without an answer', () => {
    const sut = judgeToolCalls(
      [
        call({ version: 'v2.1' }),
        call({ status: 503 }),
        call({ body: 'no-response', shape: undefined }),
        call({ tool: 'orders' }),
      ],
      spec,
    );
    expect(sut.map((c) => c.contractPassed)).toEqual([null, null, null, null]);
  });

  it('reads `1.9` as `v1.9` and keeps the fallback flags', () => {
    const [sut] = judgeToolCalls([call({ version: '1.9', fallback: true, fallbackTriggered: true })], spec);
    expect(sut).toMatchObject({ contractPassed: true, fallback: true, fallbackTriggered: true });
  });
});

describe(workflowDigestOf.name, () => {
  it('reads the verdict an agents record carries and ignores content that is not one', () => {
    const content = JSON.stringify({
      status: 'completed',
      observed: {
        verdict: 'deadlock',
        steps: 4,
        recurrence: 0,
        oscillationScore: 0,
        meanActionProbability: 0.9,
        waitForCycle: ['a', 'b', 7],
      },
    });
    expect(workflowDigestOf(content)).toEqual({
      verdict: 'deadlock',
      steps: 4,
      recurrence: 0,
      oscillationScore: 0,
      meanActionProbability: 0.9,
      waitForCycle: ['a', 'b'],
    });
    expect(workflowDigestOf('not json')).toBeUndefined();
    expect(workflowDigestOf('{"observed":{"verdict":"exploded"}}')).toBeUndefined();
    expect(workflowDigestOf('null')).toBeUndefined();
  });
});
