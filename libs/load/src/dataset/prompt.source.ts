import { readFile } from 'node:fs/promises';
import type { Dataset, EmbeddingsScenario, ChatScenario } from '@fathom/contracts';
import { SeededRandom } from '../random/seeded-random';
import { perturbPrompt } from '../perturb/prompt.perturbation';
import { DatasetParseError } from './dataset-parse.error';
import { jsonErrorReason } from './json-error.util';
import type { PromptItem } from './prompt-item';
import { drawTokenLength, exactSyntheticText, syntheticText } from './synthetic-text.util';
import { O200K_BASE, type TextTokenizer } from './text.tokenizer';
import { parseCsvDataset, parseJsonlDataset, type MappedRow } from './tabular-dataset.parser';

/**
 * Hands out prompts in a fixed cycle. Shard i starts at item i so that shards do not send the same
 * prompt in lockstep. `next(inputScale)` with a scale below 1 (the adaptive profile shrinking the
 * input-length mix) keeps that share of the last user turn's words.
 */
export class PromptSource {
  private cursor: number;

  constructor(
    readonly items: readonly PromptItem[],
    shardIndex = 0,
    private readonly tokenizer: TextTokenizer = O200K_BASE,
  ) {
    if (items.length === 0) throw new Error('a prompt source needs at least one item');
    this.cursor = shardIndex % items.length;
  }

  next(inputScale = 1): PromptItem {
    const item = this.items[this.cursor];
    this.cursor = (this.cursor + 1) % this.items.length;
    return inputScale >= 1 ? item : shrink(item, inputScale, this.tokenizer.count);
  }
}

function shrink(item: PromptItem, scale: number, countTokens: (text: string) => number): PromptItem {
  const last = item.messages[item.messages.length - 1];
  const words = last.content.split(' ');
  const kept = words.slice(0, Math.max(1, Math.round(words.length * scale))).join(' ');
  const messages = [...item.messages.slice(0, -1), { ...last, content: kept }];
  const removed = countTokens(last.content) - countTokens(kept);
  const text = item.text.slice(0, item.text.length - last.content.length) + kept;
  return { ...item, messages, text, inputTokensClient: Math.max(0, item.inputTokensClient - removed) };
}

type Message = PromptItem['messages'][number];

function itemOf(messages: Message[], maxTokens?: number, countTokens = O200K_BASE.count): PromptItem {
  const text = messages.map((m) => m.content).join('\n');
  return {
    messages,
    text,
    inputTokensClient: countTokens(text),
    ...(maxTokens === undefined ? {} : { maxTokens }),
  };
}

async function readDatasetFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new DatasetParseError(path, 0, `cannot read: ${(error as Error).message}`);
  }
}

/** JSONL prompts: `field` of every non-empty line must be a non-empty string. */
export function parsePromptJsonl(text: string, file: string, field: string): string[] {
  const prompts: string[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new DatasetParseError(file, i + 1, jsonErrorReason(error));
    }
    const prompt = (value as Record<string, unknown> | null)?.[field];
    if (typeof prompt !== 'string' || prompt === '')
      throw new DatasetParseError(file, i + 1, `field "${field}" must be a non-empty string`);
    prompts.push(prompt);
  });
  if (prompts.length === 0) throw new DatasetParseError(file, 1, 'no prompts');
  return prompts;
}

interface ShareGptConversation {
  conversations?: { from?: string; value?: string }[];
}

/**
 * ShareGPT: a JSON array (or JSONL) of `{conversations: [{from: "human"|"gpt", value}]}`. Each of the
 * first `maxTurns` human turns becomes one request carrying the conversation so far.
 */
export function parseShareGpt(text: string, file: string, maxTurns: number): Message[][] {
  let entries: { conversation: ShareGptConversation; line: number }[];
  const trimmed = text.trimStart();
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      const position = /position (\d+)/.exec((error as Error).message);
      const line = position ? text.slice(0, Number(position[1])).split('\n').length : 1;
      throw new DatasetParseError(file, line, jsonErrorReason(error));
    }
    // Line of each entry is not known after JSON.parse; the entry index is reported instead.
    entries = (parsed as ShareGptConversation[]).map((conversation, i) => ({ conversation, line: -(i + 1) }));
  } else {
    entries = [];
    text.split('\n').forEach((raw, i) => {
      if (raw.trim() === '') return;
      try {
        entries.push({ conversation: JSON.parse(raw), line: i + 1 });
      } catch (error) {
        throw new DatasetParseError(file, i + 1, jsonErrorReason(error));
      }
    });
  }
  const requests: Message[][] = [];
  for (const { conversation, line } of entries) {
    const where = (reason: string) =>
      line > 0
        ? new DatasetParseError(file, line, reason)
        : new DatasetParseError(file, 1, `entry ${-line - 1}: ${reason}`);
    if (!Array.isArray(conversation?.conversations)) throw where('needs a conversations array');
    const history: Message[] = [];
    let turns = 0;
    for (const turn of conversation.conversations) {
      if (typeof turn.value !== 'string') throw where('each turn needs a string value');
      if (turn.from === 'human' || turn.from === 'user') {
        if (turns === maxTurns) break;
        history.push({ role: 'user', content: turn.value });
        requests.push([...history]);
        turns++;
      } else if (turn.from === 'gpt' || turn.from === 'assistant') {
        history.push({ role: 'assistant', content: turn.value });
      } else if (turn.from === 'system') {
        history.push({ role: 'system', content: turn.value });
      }
    }
  }
  if (requests.length === 0) throw new DatasetParseError(file, 1, 'no human turns');
  return requests;
}

/** Prompts of a dataset, as message lists (before system prompt and perturbation). */
export async function loadDataset(
  dataset: Dataset,
  tokenizer: TextTokenizer = O200K_BASE,
): Promise<{ messages: Message[]; maxTokens?: number }[]> {
  switch (dataset.type) {
    case 'inline':
      return dataset.prompts.map((p) => ({ messages: [{ role: 'user', content: p }] }));
    case 'jsonl':
      if (dataset.columns)
        return parseJsonlDataset(await readDatasetFile(dataset.path), dataset.path, dataset.columns).map(
          rowItem,
        );
      return parsePromptJsonl(await readDatasetFile(dataset.path), dataset.path, dataset.field).map((p) => ({
        messages: [{ role: 'user', content: p }],
      }));
    case 'csv':
      return parseCsvDataset(
        await readDatasetFile(dataset.path),
        dataset.path,
        dataset.columns,
        dataset.delimiter,
      ).map(rowItem);
    case 'sharegpt':
      return parseShareGpt(await readDatasetFile(dataset.path), dataset.path, dataset.maxTurns).map(
        (messages) => ({ messages }),
      );
    case 'synthetic': {
      const random = new SeededRandom(dataset.seed);
      return Array.from({ length: dataset.size }, () => {
        const content = exactSyntheticText(random, drawTokenLength(random, dataset.inputTokens), tokenizer);
        const maxTokens = dataset.outputTokens ? drawTokenLength(random, dataset.outputTokens) : undefined;
        return {
          messages: [{ role: 'user' as const, content }],
          ...(maxTokens === undefined ? {} : { maxTokens }),
        };
      });
    }
    case 'multi-turn': {
      // One prefix shared by every session (a long system prompt), then per-session turns; ordered
      // turn by turn across sessions so later turns find the prefix (and their history) cached.
      const random = new SeededRandom(dataset.seed);
      const prefix: Message = {
        role: 'system',
        content: syntheticText(random, dataset.sharedPrefixTokens, tokenizer.oneTokenWords),
      };
      const sessions: Message[][] = Array.from({ length: dataset.sessions }, () =>
        dataset.sharedPrefixTokens > 0 ? [prefix] : [],
      );
      const out: { messages: Message[] }[] = [];
      for (let turn = 0; turn < dataset.turns; turn++) {
        for (const history of sessions) {
          if (turn > 0) history.push({ role: 'assistant', content: syntheticText(random, 16) });
          history.push({
            role: 'user',
            content: syntheticText(random, drawTokenLength(random, dataset.turnTokens)),
          });
          out.push({ messages: [...history] });
        }
      }
      return out;
    }
  }
}

function rowItem(row: MappedRow): { messages: Message[]; maxTokens?: number } {
  const user: Message = row.parts
    ? { role: 'user', content: row.prompt, parts: row.parts }
    : { role: 'user', content: row.prompt };
  const messages: Message[] = row.system ? [{ role: 'system', content: row.system }, user] : [user];
  return row.outputTokens === undefined ? { messages } : { messages, maxTokens: row.outputTokens };
}

/** The prompt source of a chat or embeddings scenario, perturbed and counted once, up front. */
export async function promptSourceFor(
  scenario: ChatScenario | EmbeddingsScenario,
  shardIndex: number,
  tokenizer: TextTokenizer = O200K_BASE,
): Promise<PromptSource> {
  const dataset: Dataset = scenario.dataset ?? {
    type: 'inline',
    prompts: (scenario as ChatScenario).prompts ?? [],
  };
  const raw = await loadDataset(dataset, tokenizer);
  const system = scenario.type === 'chat' ? scenario.system : undefined;
  // adversarial-entropy needs the target's answers: the shard adds its variants before the load.
  const perturbation =
    scenario.type === 'chat' && scenario.perturbation?.kind !== 'adversarial-entropy'
      ? scenario.perturbation
      : undefined;
  const items = raw.map(({ messages, maxTokens }) => {
    const perturbed = perturbation
      ? messages.map((m, i) =>
          i === messages.length - 1 ? { ...m, content: perturbPrompt(m.content, perturbation) } : m,
        )
      : messages;
    const withSystem: Message[] =
      system !== undefined && perturbed[0]?.role !== 'system'
        ? [{ role: 'system', content: system }, ...perturbed]
        : perturbed;
    return itemOf(withSystem, maxTokens, tokenizer.count);
  });
  return new PromptSource(items, shardIndex, tokenizer);
}

/** A one-off item (a replayed prompt), counted like the dataset's. */
export function promptItemFromText(
  text: string,
  system?: string,
  tokenizer: TextTokenizer = O200K_BASE,
  maxTokens?: number,
): PromptItem {
  return itemOf(
    system === undefined
      ? [{ role: 'user', content: text }]
      : [
          { role: 'system', content: system },
          { role: 'user', content: text },
        ],
    maxTokens,
    tokenizer.count,
  );
}
