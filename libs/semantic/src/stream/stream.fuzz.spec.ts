import fc from 'fast-check';
import { fuzzParser, textFrom } from '@fathom/testing';
import { SseDecoder } from './sse.decoder';
import { parseChatStream } from './parse-chat-stream';
import { StreamParseError } from './stream-parse.error';

/** SSE and OpenAI chat streams from a target: a result or a classified StreamParseError, nothing else. */
describe('SSE and chat stream parsing against hostile input', () => {
  const fragments = [
    'data: ',
    'data:',
    'event: ',
    'id: ',
    'retry: ',
    ': ping',
    '\n',
    '\r\n',
    '\r',
    '\n\n',
    '[DONE]',
    '{"choices":[{"delta":{"content":"hi"},"index":0}]}',
    '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a',
    '{"choices":[{"logprobs":{"content":[{"token":"a","logprob":-0.1,"top_logprobs":[]}]}}]}',
    '{"usage":{"prompt_tokens":1e309}}',
    '{"choices":null}',
    '{"error":{"message":"x"}}',
    '{',
    '}',
    '[',
    ']',
    '"',
    '\\u0000',
    '\u0000',
    '\ufeff',
    'é',
    '\ud800',
    'null',
  ];

  it('SseDecoder: 10,000 seeded streams cut anywhere, as text and as bytes', () => {
    const report = fuzzParser(
      fc.tuple(textFrom(fragments), fc.array(fc.nat(), { maxLength: 6 }), fc.uint8Array({ maxLength: 64 })),
      ([text, cuts, bytes]) => {
        const sut = new SseDecoder();
        let events = 0;
        let at = 0;
        for (const cut of [...cuts].sort((a, b) => a - b)) {
          events += sut.push(text.slice(at, Math.max(at, cut % (text.length + 1)))).length;
          at = Math.max(at, cut % (text.length + 1));
        }
        events += sut.push(text.slice(at)).length;
        events += sut.pushBytes(bytes).length;
        return events + sut.end().length;
      },
      {
        seed: 1401,
        refusal: () => false,
        check: ([text, , bytes], events) =>
          expect(events as number).toBeLessThanOrEqual(text.length + bytes.length + 1),
      },
    );
    expect(report.cases).toBe(10_000);
  });

  it('parseChatStream: 10,000 seeded bodies, streamed or whole JSON', () => {
    const report = fuzzParser(textFrom(fragments, [], 30), (text) => parseChatStream(text), {
      seed: 1402,
      refusal: (error) => error instanceof StreamParseError,
    });
    expect(report.cases).toBe(10_000);
    expect(report.heapGrowthMib).toBeLessThan(256);
  });
});
