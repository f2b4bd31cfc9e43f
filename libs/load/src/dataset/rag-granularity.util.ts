import type { RagScenario } from '@fathom/contracts';

export type RagGranularity = NonNullable<RagScenario['granularity']>;

/**
 * Cuts texts to one RAG load granularity, in order, dropping empty pieces:
 * - paragraph: blank-line separated blocks (whitespace inside collapsed);
 * - sentence: pieces ending in . ! or ? followed by whitespace (or the block's end);
 * - token: whitespace-separated words.
 */
export function splitToGranularity(texts: readonly string[], granularity: RagGranularity): string[] {
  const paragraphs = texts.flatMap((t) =>
    t
      .split(/\n\s*\n/)
      .map((p) => p.replace(/\s+/g, ' ').trim())
      .filter((p) => p.length > 0),
  );
  if (granularity === 'paragraph') return paragraphs;
  if (granularity === 'sentence')
    return paragraphs.flatMap((p) => p.split(/(?<=[.!?])\s+/).filter((s) => s.length > 0));
  return paragraphs.flatMap((p) => p.split(' ').filter((w) => w.length > 0));
}
