import { countTokens } from 'gpt-tokenizer';
import { DatasetParseError } from './dataset-parse.error';
import { loadDataset, parsePromptJsonl, parseShareGpt, PromptSource, promptSourceFor } from './prompt.source';
import { ONE_TOKEN_WORDS } from './synthetic-text.util';

describe('datasets', () => {
  it('uses words that are one token each, so synthetic lengths are exact', () => {
    for (const word of ONE_TOKEN_WORDS) expect(countTokens(` ${word}`)).toBe(1);
  });

  it('draws synthetic prompts from the seeded token-length distribution', async () => {
    const dataset = {
      type: 'synthetic' as const,
      seed: 5,
      size: 2000,
      inputTokens: { mean: 200, stdev: 40, min: 50, max: 300 },
    };
    const sut = await loadDataset(dataset);
    const lengths = sut.map((p) => countTokens(p.messages[0].content));
    const mean = lengths.reduce((a, b) => a + b, 0) / lengths.length;
    const sd = Math.sqrt(lengths.reduce((a, b) => a + (b - mean) ** 2, 0) / lengths.length);
    expect(Math.abs(mean - 200)).toBeLessThan(3);
    expect(Math.abs(sd - 40)).toBeLessThan(3);
    expect(Math.min(...lengths)).toBeGreaterThanOrEqual(50);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(300);
    expect((await loadDataset(dataset)).map((p) => p.messages[0].content)).toEqual(
      sut.map((p) => p.messages[0].content),
    );
  });

  it('refuses a JSONL line that does not parse with its line number', () => {
    expect(() => parsePromptJsonl('{"prompt":"a"}\n\n{"text":"b"}\n', 'p.jsonl', 'prompt')).toThrow(
      new DatasetParseError('p.jsonl', 3, 'field "prompt" must be a non-empty string'),
    );
    expect(parsePromptJsonl('{"q":"a"}\n{"q":"b"}', 'p.jsonl', 'q')).toEqual(['a', 'b']);
  });

  it('turns ShareGPT conversations into requests carrying the conversation so far', () => {
    const text = JSON.stringify([
      {
        conversations: [
          { from: 'human', value: 'hi' },
          { from: 'gpt', value: 'hello' },
          { from: 'human', value: 'more' },
        ],
      },
    ]);
    expect(parseShareGpt(text, 's.json', 2)).toEqual([
      [{ role: 'user', content: 'hi' }],
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'user', content: 'more' },
      ],
    ]);
    expect(() => parseShareGpt('{"conversations": []}\n{"nope": 1}\n', 's.jsonl', 1)).toThrow(
      's.jsonl:2: needs a conversations array',
    );
    expect(() => parseShareGpt('[{"conversations": [}]', 's.json', 1)).toThrow(DatasetParseError);
  });

  it('builds multi-turn sessions that share one prefix, turn by turn across sessions', async () => {
    const sut = await loadDataset({
      type: 'multi-turn',
      seed: 1,
      sessions: 3,
      turns: 2,
      sharedPrefixTokens: 64,
      turnTokens: { mean: 10, stdev: 0, min: 1, max: 20 },
    });
    expect(sut).toHaveLength(6);
    const prefix = sut[0].messages[0];
    expect(prefix.role).toBe('system');
    expect(sut.every((p) => p.messages[0].content === prefix.content)).toBe(true);
    expect(sut[3].messages.slice(0, 2)).toEqual(sut[0].messages); // session 0, turn 2 extends turn 1
    expect(sut[3].messages).toHaveLength(4);
  });

  it('cycles prompts from the shard offset, perturbs once and shrinks under an input scale', async () => {
    const sut = await promptSourceFor(
      {
        type: 'chat',
        model: 'm',
        prompts: ['one two three four', 'five six seven eight'],
        endpoint: 'chat',
        stream: true,
        maxTokens: 8,
        logprobs: false,
        system: 'be brief',
        perturbation: { kind: 'delimiter-noise', strength: 1, seed: 1 },
      },
      1,
    );
    const first = sut.next();
    expect(first.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'five| six| seven| eight|' },
    ]);
    expect(first.inputTokensClient).toBe(countTokens(first.text));
    const half = sut.next(0.5);
    expect(half.messages[1].content).toBe('one| two|');
    expect(half.inputTokensClient).toBeLessThan(first.inputTokensClient);
    expect(() => new PromptSource([])).toThrow();
  });
});
