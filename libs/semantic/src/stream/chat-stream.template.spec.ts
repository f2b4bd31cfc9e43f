import fc from 'fast-check';
import { ChatStreamAssembler } from './chat-stream.assembler';
import { StreamParseError } from './stream-parse.error';

/**
 * The assembler skips JSON.parse for a chunk that equals the last content-only chunk but for a
 * plain content string. Differential check: the same payloads with `"content": "` (a space the
 * shortcut never matches, same JSON) must give the same steps, errors and result.
 */
describe('ChatStreamAssembler content-only shortcut', () => {
  const spaced = (payload: string) => payload.split('"content":"').join('"content": "');

  function feed(payloads: readonly string[]) {
    const assembler = new ChatStreamAssembler();
    const steps: unknown[] = [];
    for (const p of payloads) {
      try {
        steps.push(assembler.accept(p));
      } catch (error) {
        steps.push(error instanceof StreamParseError ? `error ${error.kind}` : `crash ${String(error)}`);
      }
    }
    return { steps, result: assembler.result() };
  }

  // Content bodies written raw into the JSON text: quotes, backslashes, escapes, control
  // characters and non-ASCII included, so some payloads are invalid JSON on purpose.
  const rawContent = fc.oneof(
    fc.string({ maxLength: 6 }),
    fc.constantFrom(' the', '', 'é', '\\"', '\\n', '\\u00e9', '"', '\\', '\u0001', '𝄞', 'a"}],"x":"'),
  );
  const chunk = fc.record({
    id: fc.constantFrom('c1', 'c2'),
    index: fc.constantFrom(0, 0, 0, 1),
    content: rawContent,
    role: fc.boolean(),
    finish: fc.constantFrom('null', 'null', 'null', '"stop"'),
    extra: fc.constantFrom(
      '',
      '',
      '',
      ',"logprobs":null',
      ',"logprobs":{"content":[{"token":"a","logprob":-0.1,"top_logprobs":[]}]}',
    ),
    delta: fc.constantFrom(
      '',
      '',
      '',
      ',"refusal":"no"',
      ',"tool_calls":[{"index":0,"function":{"arguments":"{"}}]',
    ),
    usage: fc.constantFrom('', '', '', ',"usage":null', ',"usage":{"prompt_tokens":1,"completion_tokens":2}'),
  });
  const payload = chunk.map(
    (c) =>
      `{"id":"${c.id}","object":"chat.completion.chunk","model":"m","choices":[{"index":${c.index},` +
      `"delta":{${c.role ? '"role":"assistant",' : ''}"content":"${c.content}"${c.delta}},` +
      `"finish_reason":${c.finish}${c.extra}}]${c.usage}}`,
  );

  it('gives what a full parse of each payload gives', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(payload, payload, payload, fc.constantFrom('[DONE]', '')), { maxLength: 24 }),
        (payloads) => {
          expect(feed(payloads)).toEqual(feed(payloads.map(spaced)));
        },
      ),
      { numRuns: 3000, seed: 20261202 },
    );
  });

  it('takes the shortcut on the usual stream and still counts every token', () => {
    const tokens = [' the', ' cat', ' sat', ' on', ' é', ' 𝄞'];
    const payloads = tokens.map(
      (t) =>
        `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"${t}"},"logprobs":null,"finish_reason":null}]}`,
    );
    payloads.push(
      '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}',
      '[DONE]',
    );
    const { steps, result } = feed(payloads);

    expect(steps.slice(0, 6)).toEqual(tokens.map((t) => ({ done: false, contentDelta: t, tokens: 1 })));
    expect(result).toMatchObject({
      content: tokens.join(''),
      tokens: 6,
      finishReason: 'stop',
      id: 'c1',
      model: 'm',
    });
    expect(result.termination).toBe('done-marker');
  });
});
