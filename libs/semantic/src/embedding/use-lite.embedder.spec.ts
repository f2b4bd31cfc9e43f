import { cosineSimilarity } from './embedding-drift.util';
import { UseLiteEmbedder } from './use-lite.embedder';

describe(UseLiteEmbedder.name, () => {
  jest.setTimeout(60_000);

  it('embeds offline in 512 dimensions; paraphrases sit closer than unrelated sentences', async () => {
    const sut = new UseLiteEmbedder();
    const [reset, change, stocks, empty] = await sut.embed([
      'How do I reset my password?',
      'What is the procedure to change my password?',
      'The stock market crashed today.',
      '',
    ]);
    expect(reset).toHaveLength(512);
    expect(empty).toHaveLength(512);
    const paraphrase = cosineSimilarity(reset, change);
    const unrelated = cosineSimilarity(reset, stocks);
    expect(paraphrase).toBeGreaterThan(0.7);
    expect(unrelated).toBeLessThan(0.4);
  });
});
