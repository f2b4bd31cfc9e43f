import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { ChatStreamAssembler, NEG_INF_LOGPROB } from './chat-stream.assembler';
import { parseChatStream } from './parse-chat-stream';
import { SseDecoder } from './sse.decoder';
import { StreamParseError } from './stream-parse.error';

const fixture = (name: string): string => readFileSync(join(__dirname, '..', '__fixtures__', name), 'utf8');
const LOGPROBS_STREAM = fixture('openai-python__inline-snapshot__83b060bae42e.sse');
const TOOL_CALL_STREAM = fixture('openai-python__inline-snapshot__c6aa7e397b71.sse');
const LOGPROBS_DOCUMENT = fixture('openai-openapi__chat-logprobs-top_logprobs2-example.json');

function sse(...payloads: unknown[]): string {
  return payloads.map((p) => `data: ${typeof p === 'string' ? p : JSON.stringify(p)}\n\n`).join('');
}

function chunk(
  delta: unknown,
  extra: Record<string, unknown> = {},
  choice: Record<string, unknown> = {},
): unknown {
  return {
    id: 'x',
    object: 'chat.completion.chunk',
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: null, ...choice }],
    ...extra,
  };
}

function caught(fn: () => unknown): StreamParseError {
  try {
    fn();
  } catch (error) {
    if (error instanceof StreamParseError) return error;
    throw error;
  }
  throw new Error('expected a StreamParseError');
}

describe(ChatStreamAssembler.name, () => {
  describe('recorded OpenAI streams', () => {
    it('assembles the logprobs stream: content, 2 tokens, stop, usage, [DONE]', () => {
      const result = parseChatStream(LOGPROBS_STREAM);
      expect(result.content).toBe('Foo!');
      expect(result.tokens).toBe(2);
      expect(result.logprobs).toEqual([
        { token: 'Foo', logprob: -0.0025094282, top: [] },
        { token: '!', logprob: -0.26638845, top: [] },
      ]);
      expect(result.finishReason).toBe('stop');
      expect(result.usage).toEqual({
        promptTokens: 9,
        completionTokens: 2,
        totalTokens: 11,
        cachedTokens: null,
      });
      expect(result.model).toBe('gpt-4o-2024-08-06');
      expect(result.id).toBe('chatcmpl-ABfw5EzoqmfXjnnsXY7Yd8OC6tb3c');
      expect(result.termination).toBe('done-marker');
      expect(result.toolCalls).toEqual([]);
    });

    it('merges the streamed tool call arguments by index', () => {
      const result = parseChatStream(TOOL_CALL_STREAM);
      expect(result.toolCalls).toEqual([
        {
          index: 0,
          id: 'call_c91SqDXlYFuETYv8mUHzz6pp',
          name: 'GetWeatherArgs',
          arguments: '{"city":"Edinburgh","country":"UK","units":"c"}',
        },
      ]);
      expect(JSON.parse(result.toolCalls[0].arguments)).toEqual({
        city: 'Edinburgh',
        country: 'UK',
        units: 'c',
      });
      expect(result.content).toBe('');
      expect(result.tokens).toBe(0);
      expect(result.finishReason).toBe('tool_calls');
      expect(result.usage).toEqual({
        promptTokens: 76,
        completionTokens: 24,
        totalTokens: 100,
        cachedTokens: null,
      });
    });

    it('reads the non-streamed logprobs example with its top_logprobs', () => {
      const result = parseChatStream(LOGPROBS_DOCUMENT);
      expect(result.content).toBe('Hello! How can I assist you today?');
      expect(result.tokens).toBe(9);
      expect(result.logprobs[0]).toEqual({
        token: 'Hello',
        logprob: -0.31725305,
        top: [
          { token: 'Hello', logprob: -0.31725305 },
          { token: 'Hi', logprob: -1.3190403 },
        ],
      });
      expect(result.usage?.completionTokens).toBe(9);
      expect(result.finishReason).toBe('stop');
    });

    it('reports per-step content deltas and token counts for the load engine', () => {
      const decoder = new SseDecoder();
      const sut = new ChatStreamAssembler();
      const steps = [...decoder.push(LOGPROBS_STREAM), ...decoder.end()].map((p) => sut.accept(p));
      expect(steps.map((s) => s.tokens)).toEqual([0, 1, 1, 0, 0, 0]);
      expect(steps.map((s) => s.contentDelta)).toEqual(['', 'Foo', '!', '', '', '']);
      expect(steps.map((s) => s.done)).toEqual([false, false, false, false, false, true]);
    });
  });

  describe('fixture streams re-chunked at arbitrary points (property)', () => {
    for (const [name, text] of [
      ['logprobs', LOGPROBS_STREAM],
      ['tool call', TOOL_CALL_STREAM],
      ['CRLF tool call', TOOL_CALL_STREAM.replace(/\n/g, '\r\n')],
    ] as const) {
      it(`gives the same result for the ${name} stream however its bytes are split`, () => {
        const whole = parseChatStream(text);
        const bytes = Buffer.from(text, 'utf8');
        fc.assert(
          fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 30 }), (cuts) => {
            const points = [...new Set(cuts)].sort((a, b) => a - b);
            const decoder = new SseDecoder();
            const sut = new ChatStreamAssembler();
            let previous = 0;
            for (const p of [...points, bytes.length]) {
              for (const payload of decoder.pushBytes(bytes.subarray(previous, p))) sut.accept(payload);
              previous = p;
            }
            for (const payload of decoder.end()) sut.accept(payload);
            expect(sut.result()).toEqual(whole);
          }),
          { numRuns: 200 },
        );
      });
    }
  });

  describe('tolerance', () => {
    it("keeps vLLM's -9999.0 as the finite minus-infinity sentinel", () => {
      const result = parseChatStream(
        sse(
          chunk(
            { content: 'a' },
            {},
            {
              logprobs: {
                content: [
                  {
                    token: 'a',
                    logprob: -0.1,
                    top_logprobs: [
                      { token: 'a', logprob: -0.1 },
                      { token: 'b', logprob: -9999.0 },
                    ],
                  },
                ],
              },
            },
          ),
          '[DONE]',
        ),
      );
      expect(result.logprobs[0].top[1].logprob).toBe(NEG_INF_LOGPROB);
      expect(result.tokens).toBe(1);
    });

    it('accepts Python-style -Infinity and NaN literals outside strings', () => {
      const payload =
        '{"choices":[{"index":0,"delta":{"content":"NaN -Infinity"},"logprobs":{"content":[{"token":"x","logprob":-Infinity,"top_logprobs":[]}]}}]}';
      const result = parseChatStream(sse(payload));
      expect(result.content).toBe('NaN -Infinity');
      expect(result.logprobs[0].logprob).toBe(NEG_INF_LOGPROB);
    });

    it('ignores unknown fields such as obfuscation, and counts several tokens in one chunk', () => {
      const result = parseChatStream(
        sse(
          chunk(
            { content: 'ab', extra: 1 },
            { obfuscation: 'zzz', service_tier: 'default' },
            {
              logprobs: {
                content: [
                  { token: 'a', logprob: -1, bytes: [97], top_logprobs: [] },
                  { token: 'b', logprob: -2, bytes: null, top_logprobs: [] },
                ],
              },
            },
          ),
        ),
      );
      expect(result.content).toBe('ab');
      expect(result.tokens).toBe(2);
      expect(result.termination).toBe('truncated');
    });

    it('counts content chunks when there are no logprobs', () => {
      const result = parseChatStream(
        sse(
          chunk({ role: 'assistant', content: '' }),
          chunk({ content: 'Hel' }),
          chunk({ content: 'lo' }),
          chunk({}, {}, { finish_reason: 'length' }),
        ),
      );
      expect(result.tokens).toBe(2);
      expect(result.finishReason).toBe('length');
      expect(result.termination).toBe('finish-reason');
    });

    it('reads cached tokens from prompt_tokens_details', () => {
      const result = parseChatStream(
        sse({
          choices: [],
          usage: {
            prompt_tokens: 10,
            completion_tokens: 3,
            total_tokens: 13,
            prompt_tokens_details: { cached_tokens: 8 },
          },
        }),
      );
      expect(result.usage).toEqual({
        promptTokens: 10,
        completionTokens: 3,
        totalTokens: 13,
        cachedTokens: 8,
      });
    });

    it('assembles legacy completions with their token_logprobs/top_logprobs maps', () => {
      const result = parseChatStream(
        sse(
          {
            id: 'cmpl-1',
            object: 'text_completion',
            choices: [
              {
                index: 0,
                text: ' Hi',
                logprobs: {
                  tokens: [' Hi'],
                  token_logprobs: [-0.5],
                  top_logprobs: [{ ' Hi': -0.5, ' Yo': -1.5 }],
                  text_offset: [0],
                },
                finish_reason: null,
              },
            ],
          },
          { id: 'cmpl-1', choices: [{ index: 0, text: ' there', logprobs: null, finish_reason: 'stop' }] },
          '[DONE]',
        ),
      );
      expect(result.content).toBe(' Hi there');
      expect(result.tokens).toBe(2);
      expect(result.logprobs).toEqual([
        {
          token: ' Hi',
          logprob: -0.5,
          top: [
            { token: ' Hi', logprob: -0.5 },
            { token: ' Yo', logprob: -1.5 },
          ],
        },
      ]);
    });

    it('keeps n > 1 choices apart; top-level fields are choice 0', () => {
      const two = (c0: string, c1: string): unknown => ({
        choices: [
          { index: 1, delta: { content: c1 } },
          { index: 0, delta: { content: c0 } },
        ],
      });
      const sut = new ChatStreamAssembler();
      const step = sut.accept(JSON.stringify(two('a', 'x')));
      sut.accept(JSON.stringify(two('b', 'y')));
      expect(step).toEqual({ done: false, contentDelta: 'a', tokens: 2 });
      const result = sut.result();
      expect(result.content).toBe('ab');
      expect(result.choices.map((c) => c.content)).toEqual(['ab', 'xy']);
      expect(result.tokens).toBe(4);
    });

    it('merges tool calls from servers that omit index or repeat the name', () => {
      const result = parseChatStream(
        sse(
          chunk({ tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a"' } }] }),
          chunk({ tool_calls: [{ function: { name: 'f', arguments: ':1}' } }] }),
          chunk({ tool_calls: [{ id: 'c2', function: { name: 'g', arguments: { b: 2 } } }] }),
        ),
      );
      expect(result.toolCalls).toEqual([
        { index: 0, id: 'c1', name: 'f', arguments: '{"a":1}' },
        { index: 1, id: 'c2', name: 'g', arguments: '{"b":2}' },
      ]);
    });

    it('keeps reasoning_content apart from content', () => {
      const result = parseChatStream(
        sse(chunk({ reasoning_content: 'think' }), chunk({ content: 'answer' })),
      );
      expect(result.content).toBe('answer');
      expect(result.choices[0].reasoningContent).toBe('think');
      expect(result.tokens).toBe(1);
    });

    it('assembles a Responses API stream', () => {
      const result = parseChatStream(
        [
          'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_1","model":"gpt-4o"}}\n\n',
          'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","output_index":0,"delta":"Hi"}\n\n',
          'event: response.output_item.added\ndata: {"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","call_id":"call_9","name":"lookup","arguments":""}}\n\n',
          'data: {"type":"response.function_call_arguments.delta","output_index":1,"delta":"{}"}\n\n',
          'data: {"type":"response.completed","response":{"id":"resp_1","usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8,"input_tokens_details":{"cached_tokens":0}}}}\n\n',
        ].join(''),
      );
      expect(result.content).toBe('Hi');
      expect(result.toolCalls).toEqual([{ index: 1, id: 'call_9', name: 'lookup', arguments: '{}' }]);
      expect(result.usage).toEqual({ promptTokens: 5, completionTokens: 3, totalTokens: 8, cachedTokens: 0 });
      expect(result.finishReason).toBe('tool_calls');
      expect(result.termination).toBe('finish-reason');
    });

    it('gives an empty result for an empty body', () => {
      const result = parseChatStream('');
      expect(result).toMatchObject({
        content: '',
        tokens: 0,
        toolCalls: [],
        finishReason: null,
        usage: null,
        termination: 'empty',
      });
    });
  });

  describe('classified errors', () => {
    it('throws malformed-json on a truncated payload, keeping what came before', () => {
      const sut = new ChatStreamAssembler();
      sut.accept(JSON.stringify(chunk({ content: 'ok' })));
      const error = caught(() => sut.accept('{"choices":[{"delta":{"content":"x"'));
      expect(error.kind).toBe('malformed-json');
      expect(error.eventIndex).toBe(2);
      expect(sut.result().content).toBe('ok');
    });

    it('throws api-error on an error object, OpenAI and old-vLLM shapes', () => {
      const openai = caught(() =>
        parseChatStream(sse({ error: { message: 'Rate limit', type: 'rate_limit', code: 429 } })),
      );
      expect(openai.kind).toBe('api-error');
      expect(openai.apiError).toEqual({ message: 'Rate limit', type: 'rate_limit', code: 429 });
      const vllm = caught(() =>
        parseChatStream(sse({ object: 'error', message: 'too long', type: 'BadRequestError', code: 400 })),
      );
      expect(vllm.kind).toBe('api-error');
      expect(vllm.message).toContain('too long');
    });

    it.each([
      ['a JSON array', '[1,2]'],
      ['a number', '42'],
      ['choices as a string', '{"choices":"x"}'],
      ['content as a number', '{"choices":[{"index":0,"delta":{"content":5}}]}'],
      [
        'a logprob as a string',
        '{"choices":[{"index":0,"delta":{},"logprobs":{"content":[{"token":"a","logprob":"x"}]}}]}',
      ],
      ['usage counts as strings', '{"choices":[],"usage":{"prompt_tokens":"9"}}'],
    ])('throws unexpected-shape on %s', (_what, payload) => {
      expect(caught(() => new ChatStreamAssembler().accept(payload)).kind).toBe('unexpected-shape');
    });

    it('never throws anything but StreamParseError on arbitrary payloads (property)', () => {
      fc.assert(
        fc.property(
          fc.oneof(
            fc.string(),
            fc.json(),
            fc
              .jsonValue()
              .map((v) => JSON.stringify({ choices: [{ index: 0, delta: v, logprobs: v }], usage: v })),
          ),
          (payload) => {
            const sut = new ChatStreamAssembler();
            try {
              sut.accept(payload);
            } catch (error) {
              expect(error).toBeInstanceOf(StreamParseError);
            }
            expect(() => sut.result()).not.toThrow();
          },
        ),
        { numRuns: 500 },
      );
    });
  });
});
