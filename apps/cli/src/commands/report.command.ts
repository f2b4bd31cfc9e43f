import type { Command } from 'commander';
import { CliExit } from '../cli-exit';
import { OUT_HELP, collectOut, parseOutputs, writeOutputs } from './report-outputs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { loadReport, loadShadowReportHtml } from './report-source';

interface ReportOptions {
  out?: string[];
  api?: string;
  dataDir?: string;
  token?: string;
  shadow?: boolean;
}

/**
 * `fathom report RUN_ID --out html=report.html [--out ...]`: writes a finished run's report
 * (the same outputs as `fathom run --out`) from a running orchestrator (`--api URL`), an
 * embedded database (`--data-dir DIR`), or a file written by `--out json=`. Exit 0 written,
 * 2 no such run or report, or an output could not be written.
 */
export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description("write a finished run's report as HTML, JSON, CSV or JUnit")
    .argument('<run>', 'run id (with --api or --data-dir), or a file written by --out json=')
    .option('--out <format=path>', OUT_HELP, collectOut)
    .option('--api <url>', 'read the report from a running orchestrator')
    .option('--data-dir <dir>', 'read the report from this embedded database (fathom run/up --data-dir)')
    .option('--token <token>', 'bearer token for --api (default: $FATHOM_API_TOKEN)')
    .option('--shadow', 'the argument is a shadow campaign id: write its report (--out html= only)')
    .addHelpText(
      'after',
      `
Examples:
  fathom report 8fad2220-... --api http://127.0.0.1:7070 --out html=report.html
  fathom report 8fad2220-... --data-dir ~/.fathom/db --out csv=windows.csv --out junit=slo.xml
  fathom report run.json --out html=report.html
  fathom report 3c1e9a40-... --shadow --api http://127.0.0.1:7070 --out html=shadow.html`,
    )
    .action(async (run: string, options: ReportOptions) => {
      const outputs = parseOutputs(options.out ?? []);
      if (outputs.length === 0)
        throw new CliExit(2, 'say what to write with --out FORMAT=PATH (html, json, csv, junit)');
      if (options.shadow) {
        if (outputs.some((o) => o.format !== 'html'))
          throw new CliExit(2, 'a shadow campaign report is written as html only (--out html=PATH)');
        const html = await loadShadowReportHtml(run, options);
        for (const out of outputs) {
          try {
            await mkdir(dirname(out.path), { recursive: true });
            await writeFile(out.path, html);
          } catch (error) {
            throw new CliExit(2, `cannot write ${out.path}: ${(error as Error).message}`);
          }
          process.stdout.write(`wrote ${out.path}\n`);
        }
        return;
      }
      const doc = await loadReport(run, options);
      for (const path of await writeOutputs(outputs, doc)) process.stdout.write(`wrote ${path}\n`);
    });
}
