import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { CliExit } from '../cli-exit';
import { collectOut } from './report-outputs';
import { loadReport } from './report-source';

interface CompareOptions {
  out?: string[];
  api?: string;
  dataDir?: string;
  token?: string;
}

/**
 * `fathom compare BASE CANDIDATE`: each a run id (with `--api`/`--data-dir`) or a file written by
 * `--out json=`. Prints metric, base, candidate, change and whether the change is beyond noise
 * (the rule is printed with the table). Exit 0 when no objective regressed, 1 when one did (CI
 * gating), 2 when a report could not be read. `--out json=FILE` writes the comparison.
 */
export function registerCompareCommand(program: Command): void {
  program
    .command('compare')
    .description('compare a candidate run with a base run; exit 1 when an objective regressed')
    .argument('<base>', 'run id or report file (--out json=) of the base run')
    .argument('<candidate>', 'run id or report file of the candidate run')
    .option('--out <format=path>', 'json=FILE: write the comparison as JSON; repeatable', collectOut)
    .option('--api <url>', 'read run ids from a running orchestrator')
    .option('--data-dir <dir>', 'read run ids from this embedded database')
    .option('--token <token>', 'bearer token for --api (default: $FATHOM_API_TOKEN)')
    .addHelpText(
      'after',
      `
Examples:
  fathom compare base.json candidate.json
  fathom compare 8fad2220-... 91c0d4e1-... --api http://127.0.0.1:7070 --out json=compare.json`,
    )
    .action(async (baseRef: string, candidateRef: string, options: CompareOptions) => {
      const outputs = (options.out ?? []).map((value) => {
        const match = /^json=(.+)$/.exec(value);
        if (!match) throw new CliExit(2, `--out ${value}: compare writes json=PATH only`);
        return match[1];
      });
      const base = await loadReport(baseRef, options);
      const candidate = await loadReport(candidateRef, options);
      const { compareRuns, formatComparison } = await import('@fathom/analysis');
      const comparison = compareRuns(base, candidate);
      for (const path of outputs) {
        try {
          await mkdir(dirname(path), { recursive: true });
          await writeFile(path, `${JSON.stringify(comparison, null, 2)}\n`);
        } catch (error) {
          throw new CliExit(2, `cannot write ${path}: ${(error as Error).message}`);
        }
      }
      process.stdout.write(`${formatComparison(comparison)}\n`);
      process.exitCode = comparison.regressions.length ? 1 : 0;
    });
}
