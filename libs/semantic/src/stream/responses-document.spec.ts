import { ChatStreamAssembler } from './chat-stream.assembler';

describe('ChatStreamAssembler with a whole Responses API object (stream: false)', () => {
  it('reads the output texts, the usage and the end status', () => {
    const sut = new ChatStreamAssembler();
    const document = {
      id: 'resp_1',
      object: 'response',
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      model: 'm',
      output: [
        { type: 'reasoning', summary: [] },
        {
          type: 'message',
          role: 'assistant',
          content: [
            { type: 'output_text', text: 'Prefix caching ', annotations: [] },
            { type: 'output_text', text: 'reuses KV.' },
          ],
        },
      ],
      usage: {
        input_tokens: 9,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 4,
        total_tokens: 13,
      },
    };
    expect(sut.accept(JSON.stringify(document)).contentDelta).toBe('Prefix caching reuses KV.');
    const result = sut.result();
    expect(result).toMatchObject({
      id: 'resp_1',
      content: 'Prefix caching reuses KV.',
      finishReason: 'length',
    });
    expect(result.usage).toMatchObject({ promptTokens: 9, completionTokens: 4, cachedTokens: 0 });
  });
});
