/**
 * Embedders: ms per sentence and embeddings per second (USE-lite, batches of 16), and the
 * cosine of paraphrase vs unrelated pairs. Prints figures; never fails.
 * Run: node -r ./bench/ts-register.js bench/semantic-embedding.bench.ts [sentences]
 */
import { UseLiteEmbedder, cosineSimilarity } from '@fathom/semantic';

const PAIRS: [string, string, string][] = [
  [
    'How do I reset my password?',
    'What is the procedure to change my password?',
    'The stock market crashed today.',
  ],
  ['The cat sat on the mat.', 'A cat was sitting on the rug.', 'Quarterly revenue rose by ten percent.'],
  ['Where is my order?', 'I want to know where my package is.', 'Explain how photosynthesis works.'],
  [
    'Book a table for two tonight.',
    'Reserve dinner for two people this evening.',
    'The GPU ran out of memory.',
  ],
];

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 128);
  const sut = new UseLiteEmbedder(16);
  let t = performance.now();
  await sut.embed(['warm up']);
  console.log(`load + first embed: ${(performance.now() - t).toFixed(0)} ms`);
  const texts = Array.from(
    { length: n },
    (_, i) => `Response ${i}: the model answered question ${i * 31} about topic ${i % 17} in some detail.`,
  );
  t = performance.now();
  await sut.embed(texts);
  const ms = performance.now() - t;
  console.log(
    `use-lite: ${n} sentences in ${ms.toFixed(0)} ms = ${(ms / n).toFixed(1)} ms/sentence, ${((n * 1000) / ms).toFixed(1)} embeddings/s`,
  );
  for (const [a, b, c] of PAIRS) {
    const [va, vb, vc] = await sut.embed([a, b, c]);
    console.log(
      `paraphrase ${cosineSimilarity(va, vb).toFixed(3)}  unrelated ${cosineSimilarity(va, vc).toFixed(3)}  (${a})`,
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
