import { answerChecks, canonicalJson } from './answer-checks.util';

const tools = [
  {
    type: 'function',
    function: {
      name: 'lookup_order',
      parameters: {
        type: 'object',
        properties: { order_id: { type: 'string' }, verbose: { type: 'boolean' } },
        required: ['order_id'],
      },
    },
  },
];
const call = (args: string, name = 'lookup_order') => [{ index: 0, id: 'c1', name, arguments: args }];
const answer = (over: Partial<Parameters<typeof answerChecks>[1]> = {}) => ({
  content: '',
  refusal: '',
  parsedToolCalls: [],
  ...over,
});

describe('answerChecks', () => {
  it('canonicalises tool-call arguments so key order does not count', () => {
    expect(canonicalJson('{"b":1,"a":{"d":2,"c":[{"f":1,"e":0}]}}')).toBe(
      '{"a":{"c":[{"e":0,"f":1}],"d":2},"b":1}',
    );
    expect(canonicalJson('{"a":')).toBe('{"a":');
    expect(
      answerChecks({ tools }, answer({ parsedToolCalls: call('{"verbose":true,"order_id":"x"}') })),
    ).toEqual({
      toolCalls: [{ name: 'lookup_order', arguments: '{"order_id":"x","verbose":true}' }],
      refused: false,
      schemaValid: true,
    });
  });

  it("checks each tool call's arguments against that tool's parameters", () => {
    const valid = (args: string, name?: string) =>
      answerChecks({ tools }, answer({ parsedToolCalls: call(args, name) })).schemaValid;
    expect(valid('{"order_id":42}')).toBe(false);
    expect(valid('{"verbose":true}')).toBe(false);
    expect(valid('not json')).toBe(false);
    expect(valid('{"order_id":"x"}', 'undeclared_tool')).toBe(false);
  });

  it('checks content against a json_object or json_schema response format', () => {
    const schema = {
      type: 'json_schema',
      json_schema: {
        name: 'r',
        schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      },
    };
    const valid = (format: unknown, content: string) =>
      answerChecks({ response_format: format }, answer({ content })).schemaValid;
    expect(valid({ type: 'json_object' }, '{"a":1}')).toBe(true);
    expect(valid({ type: 'json_object' }, 'Sure: {"a":1}')).toBe(false);
    expect(valid(schema, '{"n":3}')).toBe(true);
    expect(valid(schema, '{"n":"3"}')).toBe(false);
    expect(valid(schema, '{}')).toBe(false);
    expect(valid({ type: 'text' }, 'anything')).toBeNull();
    expect(answerChecks({}, answer({ content: 'plain' })).schemaValid).toBeNull();
  });

  it('names refusals from the text or the refusal field', () => {
    expect(answerChecks({}, answer({ content: "I'm sorry, but I can't help with that." })).refused).toBe(
      true,
    );
    expect(answerChecks({}, answer({ refusal: 'no' })).refused).toBe(true);
    expect(answerChecks({}, answer({ content: 'Here it is.' })).refused).toBe(false);
  });
});
