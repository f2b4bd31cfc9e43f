import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { DatasetSchema } from '@fathom/contracts';
import { DEFAULT_FACTORY_OPTIONS, loadDataset } from '@fathom/load';
import { CliExit } from '../cli-exit';
import { DEFAULT_WORDS, registerDataCommand } from './data.command';

const ROOT = join(__dirname, '..', '..', '..', '..');
const CORPUS = join(ROOT, 'libs', 'load', 'src', '__fixtures__', 'data-factory', 'corpus.txt');

async function run(...args: string[]): Promise<string> {
  const program = new Command('fathom').exitOverride();
  registerDataCommand(program);
  let stdout = '';
  const out = jest
    .spyOn(process.stdout, 'write')
    .mockImplementation((chunk) => ((stdout += String(chunk)), true));
  try {
    await program.parseAsync(['node', 'fathom', 'data', 'build', ...args]);
  } finally {
    out.mockRestore();
  }
  return stdout;
}

describe('fathom data build', () => {
  it("defaults --min-words and --max-words to the factory's defaults", () => {
    expect(DEFAULT_WORDS).toEqual({
      minWords: DEFAULT_FACTORY_OPTIONS.minWords,
      maxWords: DEFAULT_FACTORY_OPTIONS.maxWords,
    });
  });

  jest.setTimeout(120_000);
  const dir = mkdtempSync(join(tmpdir(), 'fathom-data-'));

  it('builds a jsonl campaign dataset from a corpus with USE-lite, every line valid, and reports each gate', async () => {
    const out = join(dir, 'set.jsonl');
    const reportFile = join(dir, 'report.json');
    const stdout = await run(CORPUS, '--out', out, '--report', reportFile, '--seed', '3');
    const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(5);
    const dataset = DatasetSchema.parse({ type: 'jsonl', path: out });
    const loaded = await loadDataset(dataset);
    expect(loaded).toHaveLength(lines.length);
    const corpusText = readFileSync(CORPUS, 'utf8');
    lines.forEach((line, i) => {
      const record = JSON.parse(line) as {
        prompt: string;
        consistency: number;
        perplexity: number;
        diversity: number;
      };
      expect(typeof record.prompt).toBe('string');
      expect(record.prompt.length).toBeGreaterThan(0);
      expect(loaded[i].messages).toEqual([{ role: 'user', content: record.prompt }]);
      expect(corpusText).not.toContain(record.prompt); // perturbed, not copied
      expect(record.consistency).toBeGreaterThanOrEqual(0.42);
      expect(record.perplexity).toBeLessThanOrEqual(15.6);
      expect(record.diversity).toBeGreaterThanOrEqual(0.67);
    });
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as {
      corpus: { dropped: Record<string, number> };
      gates: { gate: string; applied: boolean; source: string; kept: number }[];
      perturbed: { byKind: Record<string, number> };
      written: number;
    };
    expect(report.corpus.dropped).toEqual({ empty: 0, duplicate: 1, tooShort: 1, tooLong: 0 });
    expect(report.gates.map((g) => [g.gate, g.applied])).toEqual([
      ['semantic-consistency', true],
      ['perplexity', true],
      ['ngram-jaccard-diversity', true],
    ]);
    expect(report.gates[2].kept).toBe(lines.length);
    expect(report.perturbed.byKind['embedding-noise']).toBeGreaterThan(0);
    expect(report.written).toBe(lines.length);
    expect(stdout).toContain('gate perplexity (<= 15.6, SPEC.md, cross-modal test data factory)');
    expect(stdout).toContain('built from the cleaned corpus itself');
    expect(stdout).toContain(`wrote ${lines.length} items to ${out}`);
  });

  it('refuses an unreadable corpus (exit 1) and reports an empty result (exit 2) without crashing', async () => {
    const missing = run(join(dir, 'nope.txt'), '--out', join(dir, 'x.jsonl'), '--no-embeddings');
    await expect(missing).rejects.toMatchObject({
      code: 1,
      message: expect.stringMatching(/unreadable corpus/),
    });
    await expect(missing).rejects.toBeInstanceOf(CliExit);
    expect(existsSync(join(dir, 'x.jsonl'))).toBe(false);
    const tiny = join(dir, 'tiny.txt');
    writeFileSync(tiny, 'hi\n\n\u0000\u0000\n\nok then\n');
    const empty = join(dir, 'empty.jsonl');
    await expect(run(tiny, '--out', empty, '--no-embeddings')).rejects.toMatchObject({ code: 2 });
    expect(readFileSync(empty, 'utf8')).toBe('');
  });
});
