import { mkdtempSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { extractIntentPaths, intentPathsOf, loadReplay, parseReplayOtel } from '../profile/replay.loader';
import { SeededRandom } from '../random/seeded-random';
import { DatasetParseError } from './dataset-parse.error';
import { loadDataset, PromptSource } from './prompt.source';
import { parseCsv, parseCsvDataset, parseJsonlDataset } from './tabular-dataset.parser';
import { exactSyntheticText, ONE_TOKEN_WORDS } from './synthetic-text.util';
import { loadTokenizer, O200K_BASE } from './text.tokenizer';
import { TracePromptBuilder, TRACE_BLOCK_TOKENS } from './trace-prompt.builder';

const fixtures = join(__dirname, '../__fixtures__/traces');

/** A Hugging Face tokenizer.json (WordPiece, BERT pre-tokenizer) over the common words and a few pieces. */
function writeHfTokenizer(): string {
  const vocab = [
    '[PAD]',
    '[UNK]',
    '[CLS]',
    '[SEP]',
    ...ONE_TOKEN_WORDS,
    'river',
    '##s',
    'three',
    'name',
    '.',
  ];
  const dir = mkdtempSync(join(tmpdir(), 'fathom-tok-'));
  const path = join(dir, 'tokenizer.json');
  writeFileSync(
    path,
    JSON.stringify({
      version: '1.0',
      added_tokens: vocab.slice(0, 4).map((content, id) => ({
        id,
        content,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      })),
      normalizer: {
        type: 'BertNormalizer',
        clean_text: true,
        handle_chinese_chars: true,
        strip_accents: null,
        lowercase: true,
      },
      pre_tokenizer: { type: 'BertPreTokenizer' },
      post_processor: { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] },
      decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
      model: {
        type: 'WordPiece',
        unk_token: '[UNK]',
        continuing_subword_prefix: '##',
        max_input_chars_per_word: 100,
        vocab: Object.fromEntries(vocab.map((w, i) => [w, i])),
      },
    }),
  );
  return path;
}

describe('tokenizers (scenario.tokenizer)', () => {
  it('counts with o200k_base by default, cl100k_base on request, and a Hugging Face tokenizer.json without special tokens', async () => {
    expect(await loadTokenizer(undefined)).toBe(O200K_BASE);
    const cl100k = await loadTokenizer('cl100k_base');
    expect(cl100k.name).toBe('cl100k_base');
    // Loaded once, then the same.
    expect(await loadTokenizer('cl100k_base')).toBe(cl100k);
    // The vocabularies differ (gpt-tokenizer 4.0.0): 4 tokens against 2.
    expect(cl100k.count('こんにちは世界')).toBe(4);
    expect(O200K_BASE.count('こんにちは世界')).toBe(2);
    const hf = await loadTokenizer({ path: writeHfTokenizer() });
    expect(hf.name).toMatch(/^hf:.*tokenizer\.json$/);
    // WordPiece: "rivers" is river + ##s; the [CLS]/[SEP] the post-processor adds are not counted.
    expect(hf.count('Name three rivers.')).toBe(5);
    expect(hf.oneTokenWords.length).toBeGreaterThan(50);
  });

  it('refuses a tokenizer file that is missing or not a tokenizer.json, naming the file', async () => {
    await expect(loadTokenizer({ path: '/nonexistent/tokenizer.json' })).rejects.toThrow(DatasetParseError);
    const dir = mkdtempSync(join(tmpdir(), 'fathom-tok-'));
    writeFileSync(join(dir, 'bad.json'), '{"vocab": {}}');
    await expect(loadTokenizer({ path: join(dir, 'bad.json') })).rejects.toThrow(/no "model"/);
  });

  it('makes synthetic texts of exactly the drawn length in each tokenizer', async () => {
    const hf = await loadTokenizer({ path: writeHfTokenizer() });
    for (const tokenizer of [O200K_BASE, await loadTokenizer('cl100k_base'), hf])
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 600 }), fc.integer(), (n, seed) => {
          expect(tokenizer.count(exactSyntheticText(new SeededRandom(seed), n, tokenizer))).toBe(n);
        }),
        { numRuns: 30 },
      );
  });

  it('draws a synthetic dataset of exact lengths in the chosen tokenizer', async () => {
    const cl100k = await loadTokenizer('cl100k_base');
    const items = await loadDataset(
      { type: 'synthetic', seed: 4, size: 20, inputTokens: { mean: 300, stdev: 80, min: 50, max: 600 } },
      cl100k,
    );
    const lengths = items.map((i) => cl100k.count(i.messages[0].content));
    expect(Math.min(...lengths)).toBeGreaterThanOrEqual(50);
    expect(new Set(lengths).size).toBeGreaterThan(10);
  });
});

describe('JSONL and CSV datasets with a column mapping', () => {
  it('reads RFC 4180 CSV: quoted delimiters, doubled quotes, newlines in quotes, CRLF', () => {
    const rows = parseCsv('prompt,max\r\n"a, b",3\r\n"say ""hi""\nplease",4\n', 'x.csv');
    expect(rows).toEqual([
      { line: 1, fields: ['prompt', 'max'] },
      { line: 2, fields: ['a, b', '3'] },
      { line: 3, fields: ['say "hi"\nplease', '4'] },
    ]);
    expect(() => parseCsv('a\n"open', 'x.csv')).toThrow(/x\.csv:2: a quoted field is not closed/);
  });

  it('maps columns to the prompt, output length and system message, and names the bad line', () => {
    const columns = { prompt: 'question', outputTokens: 'max_tokens', system: 'persona' };
    const csv = 'id,question,max_tokens,persona\n1,What is KV caching?,64,You are terse.\n2,Name a river,,\n';
    expect(() => parseCsvDataset(csv, 'q.csv', columns)).toThrow(
      /q\.csv:3: "max_tokens" must be a positive integer/,
    );
    const ok = parseCsvDataset(csv.replace('Name a river,,', 'Name a river,8,'), 'q.csv', columns);
    expect(ok).toEqual([
      { prompt: 'What is KV caching?', outputTokens: 64, system: 'You are terse.' },
      { prompt: 'Name a river', outputTokens: 8 },
    ]);
    expect(() => parseCsvDataset(csv, 'q.csv', { prompt: 'text' })).toThrow(/q\.csv:1: no column "text"/);
    const jsonl = '{"q": "hi", "n": 5}\n\n{"q": "", "n": 5}\n';
    expect(() => parseJsonlDataset(jsonl, 'd.jsonl', { prompt: 'q', outputTokens: 'n' })).toThrow(
      /d\.jsonl:3: "q" must be a non-empty string/,
    );
    expect(parseJsonlDataset('{"q": "hi", "n": 5}', 'd.jsonl', { prompt: 'q', outputTokens: 'n' })).toEqual([
      { prompt: 'hi', outputTokens: 5 },
    ]);
  });

  it('loads a CSV dataset as messages with the system row and max tokens', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fathom-ds-'));
    writeFileSync(join(dir, 'q.csv'), 'question;n;sys\nWhat is TTFT?;12;Be brief.\n');
    const items = await loadDataset({
      type: 'csv',
      path: join(dir, 'q.csv'),
      delimiter: ';',
      columns: { prompt: 'question', outputTokens: 'n', system: 'sys' },
    });
    expect(items).toEqual([
      {
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'What is TTFT?' },
        ],
        maxTokens: 12,
      },
    ]);
  });
});

describe('request traces (BurstGPT, Mooncake) and OpenTelemetry file-exporter traces', () => {
  it("reads BurstGPT's CSV: seconds to ms from the first request, request and response tokens", async () => {
    const arrivals = await loadReplay(join(fixtures, 'burstgpt.csv'), 'burstgpt');
    expect(arrivals).toEqual([
      { offsetMs: 0, inputTokens: 472, outputTokens: 18 },
      { offsetMs: 40_000, inputTokens: 1087, outputTokens: 136 },
      { offsetMs: 113_000, inputTokens: 417, outputTokens: 236 },
      { offsetMs: 129_000, inputTokens: 1360, outputTokens: 0 },
    ]);
  });

  it("reads Mooncake's JSONL and builds prompts of exactly its lengths whose shared hash ids are shared text", async () => {
    const arrivals = await loadReplay(join(fixtures, 'mooncake.jsonl'), 'mooncake');
    expect(arrivals.map((a) => [a.offsetMs, a.inputTokens, a.outputTokens, a.prefixBlocks?.[0]])).toEqual([
      [0, 6755, 500, 0],
      [0, 7319, 490, 0],
      [3052, 7234, 794, 0],
    ]);
    const sut = new TracePromptBuilder(
      O200K_BASE,
      new PromptSource([{ messages: [], text: 'x', inputTokensClient: 1 }]),
      {
        seed: 1,
      },
    );
    const [a, b] = arrivals.map((x) => sut.item(x));
    expect(a.inputTokensClient).toBe(6755);
    expect(O200K_BASE.count(a.text)).toBe(6755);
    expect(b.inputTokensClient).toBe(7319);
    expect(a.maxTokens).toBe(500);
    // Block 0 is shared: the first 512 tokens are the same text; block 1 vs 15 differ.
    const words = (t: string) => t.split(' ');
    expect(words(a.text).slice(0, TRACE_BLOCK_TOKENS)).toEqual(words(b.text).slice(0, TRACE_BLOCK_TOKENS));
    expect(words(a.text).slice(TRACE_BLOCK_TOKENS, 2 * TRACE_BLOCK_TOKENS)).not.toEqual(
      words(b.text).slice(TRACE_BLOCK_TOKENS, 2 * TRACE_BLOCK_TOKENS),
    );
  });

  it('refuses a trace row without its lengths, naming the line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fathom-tr-'));
    writeFileSync(
      join(dir, 'm.jsonl'),
      '{"timestamp": 1, "input_length": 5, "output_length": 2}\n{"timestamp": 2, "input_length": -1}\n',
    );
    await expect(loadReplay(join(dir, 'm.jsonl'), 'mooncake')).rejects.toThrow(
      /m\.jsonl:2: input_length must be an integer/,
    );
    writeFileSync(join(dir, 'b.csv'), 'Timestamp,Model\n1,x\n');
    await expect(loadReplay(join(dir, 'b.csv'), 'burstgpt')).rejects.toThrow(/no "Request tokens" column/);
  });

  it("reads the OpenTelemetry file exporter's JSON lines like one export, and weighs the intent paths", async () => {
    const text = await readFile(join(fixtures, 'otel-file-exporter.jsonl'), 'utf8');
    const file = 'otel-file-exporter.jsonl';
    const arrivals = parseReplayOtel(text, file);
    expect(arrivals.map((a) => a.offsetMs)).toEqual([0, 200, 400]);
    expect(arrivals[0].intentPath).toEqual(['qa', 'chart', 'export']);
    const paths = extractIntentPaths(text, file);
    expect(paths).toEqual([
      { path: ['qa', 'chart', 'export'], weight: 2 / 3 },
      { path: ['qa', 'summary'], weight: 1 / 3 },
    ]);
    expect(intentPathsOf(arrivals)).toEqual(paths);
    expect(() => parseReplayOtel(`${text.split('\n')[0]}\n{"spans": []}\n`, file)).toThrow(
      /:2: no resourceSpans/,
    );
  });

  it('draws each replayed request an intent path by the weights, seeded', () => {
    const paths = [
      { path: ['qa', 'chart', 'export'], weight: 0.75 },
      { path: ['qa', 'summary'], weight: 0.25 },
    ];
    const source = new PromptSource([{ messages: [], text: '', inputTokensClient: 0 }]);
    const draw = (seed: number) => {
      const sut = new TracePromptBuilder(O200K_BASE, source, { seed, paths });
      return Array.from({ length: 4000 }, () => sut.item({ offsetMs: 0 }).intentPath!.length);
    };
    const drawn = draw(3);
    expect(draw(3)).toEqual(drawn);
    const share = drawn.filter((n) => n === 3).length / drawn.length;
    expect(share).toBeGreaterThan(0.72);
    expect(share).toBeLessThan(0.78);
  });
});
