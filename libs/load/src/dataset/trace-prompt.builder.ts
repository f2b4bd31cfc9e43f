import type { ReplayArrival } from '../profile/replay.loader';
import { SeededRandom, deriveSeed } from '../random/seeded-random';
import type { PromptItem } from './prompt-item';
import type { PromptSource } from './prompt.source';
import { promptItemFromText } from './prompt.source';
import { syntheticText } from './synthetic-text.util';
import type { TextTokenizer } from './text.tokenizer';

/** Mooncake's block size: each hash id stands for 512 tokens of the prompt. */
export const TRACE_BLOCK_TOKENS = 512;
/** Block texts kept (about 2 KB each); the cache starts afresh when full. */
const MAX_CACHED_BLOCKS = 4096;

/** A weighted intent path (`extractIntentPaths`). */
export interface WeightedPath {
  path: string[];
  weight: number;
}

/**
 * What a replayed arrival sends: its recorded prompt; or, for token-length traces (BurstGPT,
 * Mooncake), a synthetic prompt of exactly its input length in the scenario's tokenizer (the
 * tokenizer's one-token words, whose counts add up) asking for its output length; else the
 * scenario's next prompt. Mooncake's hash ids become shared blocks: equal ids, equal text, so
 * the target's prefix cache sees what the recorded service saw. With intent paths, each item
 * carries a path drawn by the paths' weights (seeded). Built when the schedule hands out the
 * arrival, before the executor sleeps until its time.
 */
export class TracePromptBuilder {
  private readonly blocks = new Map<number, string[]>();
  private readonly random: SeededRandom;
  private readonly cumulative: number[];

  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly source: PromptSource,
    private readonly options: { seed: number; system?: string; paths?: readonly WeightedPath[] },
  ) {
    this.random = new SeededRandom(deriveSeed(options.seed, 7_919));
    let total = 0;
    this.cumulative = (options.paths ?? []).map((p) => (total += p.weight));
  }

  item(arrival: ReplayArrival): PromptItem {
    const { system } = this.options;
    let item: PromptItem;
    if (arrival.prompt !== undefined) item = promptItemFromText(arrival.prompt, system, this.tokenizer);
    else if (arrival.inputTokens !== undefined) {
      const maxTokens = arrival.outputTokens ? arrival.outputTokens : undefined;
      item = promptItemFromText(this.text(arrival), system, this.tokenizer, maxTokens);
    } else item = this.source.next();
    const path = this.drawPath() ?? arrival.intentPath;
    return path === undefined ? item : { ...item, intentPath: path };
  }

  private text(arrival: ReplayArrival): string {
    const n = Math.max(1, arrival.inputTokens ?? 1);
    if (!arrival.prefixBlocks?.length) return syntheticText(this.random, n, this.tokenizer.oneTokenWords);
    const words: string[] = [];
    for (const id of arrival.prefixBlocks) {
      if (words.length >= n) break;
      words.push(...this.block(id));
    }
    while (words.length < n)
      words.push(...syntheticText(this.random, n - words.length, this.tokenizer.oneTokenWords).split(' '));
    return words.slice(0, n).join(' ');
  }

  private block(id: number): string[] {
    let words = this.blocks.get(id);
    if (words === undefined) {
      if (this.blocks.size >= MAX_CACHED_BLOCKS) this.blocks.clear();
      words = syntheticText(
        new SeededRandom(deriveSeed(this.options.seed, id)),
        TRACE_BLOCK_TOKENS,
        this.tokenizer.oneTokenWords,
      ).split(' ');
      this.blocks.set(id, words);
    }
    return words;
  }

  private drawPath(): string[] | undefined {
    const paths = this.options.paths;
    if (!paths?.length) return undefined;
    const x = this.random.next() * this.cumulative[this.cumulative.length - 1];
    const i = this.cumulative.findIndex((c) => x < c);
    return paths[i === -1 ? paths.length - 1 : i].path;
  }
}
