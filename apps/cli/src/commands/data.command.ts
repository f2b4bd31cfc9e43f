import { readFileSync, writeFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import type { FactoryReport } from '@fathom/load';
import { CliExit } from '../cli-exit';

/** Exit codes: 1 the corpus could not be read, an output not written or the options conflict; 2 no item survived. */
const EXIT_IO = 1;
const EXIT_EMPTY = 2;

/**
 * The defaults of `--min-words`/`--max-words`: @fathom/load's DEFAULT_FACTORY_OPTIONS, written out
 * so that registering the command does not load the factory (data.command.spec.ts holds them equal).
 */
export const DEFAULT_WORDS = { minWords: 4, maxWords: 200 } as const;

interface DataBuildOptions {
  out: string;
  report?: string;
  seed: number;
  minWords: number;
  maxWords: number;
  embeddings: boolean;
}

/**
 * `fathom data build CORPUS --out FILE [--report FILE] [--seed N] [--no-embeddings]`: the test
 * data factory. Writes JSON lines (`{"prompt", "source", "perturbations", ...}`) that a campaign
 * reads as `dataset: { type: jsonl, path: FILE }`, and prints what each quality gate kept and
 * dropped, with the spec's thresholds.
 */
export function registerDataCommand(program: Command): void {
  const data = program.command('data').description('Build test datasets');
  data
    .command('build')
    .description(
      'Corpus (paragraphs or lines) -> cleaned -> perturbed -> quality gates -> a jsonl campaign dataset',
    )
    .argument('<corpus>', 'text file: paragraphs separated by blank lines, or one item a line')
    .requiredOption('--out <file>', 'JSON-lines dataset to write')
    .option('--report <file>', 'also write the report as JSON')
    .option('--seed <n>', 'seed of the perturbations', int('--seed', -(2 ** 31), 2 ** 31 - 1), 1)
    .option('--min-words <n>', 'drop shorter items', int('--min-words', 1, 10000), DEFAULT_WORDS.minWords)
    .option('--max-words <n>', 'drop longer items', int('--max-words', 1, 100000), DEFAULT_WORDS.maxWords)
    .option('--no-embeddings', 'no embedding noise and no semantic-consistency gate (no model load)')
    .action(async (corpusFile: string, options: DataBuildOptions) => {
      let corpus: string;
      try {
        corpus = readFileSync(corpusFile, 'utf8');
      } catch (error) {
        throw new CliExit(EXIT_IO, `data build: unreadable corpus: ${reason(error)}`);
      }
      if (options.minWords > options.maxWords)
        throw new CliExit(
          EXIT_IO,
          `data build: --min-words ${options.minWords} > --max-words ${options.maxWords}`,
        );
      const [{ DEFAULT_FACTORY_OPTIONS, buildDataset }, { UseLiteEmbedder }] = await Promise.all([
        import('@fathom/load'),
        import('@fathom/semantic'),
      ]);
      const { records, report } = await buildDataset(corpus, {
        ...DEFAULT_FACTORY_OPTIONS,
        seed: options.seed,
        minWords: options.minWords,
        maxWords: options.maxWords,
        embedder: options.embeddings ? new UseLiteEmbedder() : null,
      });
      write(options.out, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
      if (options.report) write(options.report, `${JSON.stringify(report, null, 2)}\n`);
      process.stdout.write(formatReport(report, options.out));
      if (records.length === 0)
        throw new CliExit(EXIT_EMPTY, `data build: no item passed the gates; ${options.out} is empty`);
    });
}

export function formatReport(report: FactoryReport, out: string): string {
  const lines = [
    `corpus: ${report.corpus.read} read, ${report.corpus.cleaned} cleaned (dropped: ${Object.entries(
      report.corpus.dropped,
    )
      .map(([k, v]) => `${v} ${k}`)
      .join(', ')})`,
    `perturbed: ${report.perturbed.candidates} candidates (${Object.entries(report.perturbed.byKind)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}); embedding noise ${report.perturbed.embeddingNoise}`,
    `note: ${report.perplexityModel}`,
    ...report.gates.map((g) =>
      g.applied
        ? `gate ${g.gate} (${g.threshold}, ${g.source}): ${g.in} in, ${g.kept} kept, ${g.dropped} dropped`
        : `gate ${g.gate} (${g.threshold}, ${g.source}): not applied, ${g.note ?? ''}`,
    ),
    `wrote ${report.written} items to ${out}`,
  ];
  return `${lines.join('\n')}\n`;
}

function write(file: string, text: string): void {
  try {
    writeFileSync(file, text);
  } catch (error) {
    throw new CliExit(EXIT_IO, `data build: cannot write ${file}: ${reason(error)}`);
  }
}

function int(flag: string, min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`${flag} needs an integer in ${min}..${max}, got "${value}"`);
    return n;
  };
}

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));
