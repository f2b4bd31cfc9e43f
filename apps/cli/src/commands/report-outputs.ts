import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, extname } from 'node:path';
import type { RunReportDocument } from '@fathom/analysis';
import { CliExit } from '../cli-exit';

export const OUTPUT_FORMATS = ['html', 'json', 'csv', 'junit'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export interface OutputSpec {
  readonly format: OutputFormat;
  readonly path: string;
}

/** Commander's collector for a repeatable `--out FORMAT=PATH`. */
export function collectOut(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export const OUT_HELP = `write the report: html=FILE (one self-contained page), json=FILE (the report document; fathom compare reads it), csv=FILE (one row per window; the sampled requests go to FILE with .records before its extension), junit=FILE (a test case per SLO and tier objective); repeatable`;

/** Parses every `--out` value; a bad one stops the command before any run (exit 2). */
export function parseOutputs(values: readonly string[]): OutputSpec[] {
  return values.map((value) => {
    const at = value.indexOf('=');
    const format = at > 0 ? value.slice(0, at) : '';
    const path = at > 0 ? value.slice(at + 1) : '';
    if (!(OUTPUT_FORMATS as readonly string[]).includes(format) || path === '') {
      throw new CliExit(
        2,
        `--out ${value}: expected FORMAT=PATH with FORMAT one of ${OUTPUT_FORMATS.join(', ')}`,
      );
    }
    return { format: format as OutputFormat, path };
  });
}

/** Where `--out csv=FILE` puts the sampled per-request records: `windows.csv` -> `windows.records.csv`. */
export function recordsPathOf(path: string): string {
  const ext = extname(path);
  return ext ? `${path.slice(0, -ext.length)}.records${ext}` : `${path}.records.csv`;
}

/** Writes every requested output of one report; returns the paths written, in order. */
export async function writeOutputs(
  outputs: readonly OutputSpec[],
  doc: RunReportDocument,
): Promise<string[]> {
  const { junitXml, loadReportAssets, recordsCsv, renderReportHtml, windowsCsv } =
    await import('@fathom/analysis');
  const written: string[] = [];
  const put = async (path: string, text: string) => {
    try {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, text);
    } catch (error) {
      throw new CliExit(2, `cannot write ${path}: ${(error as Error).message}`);
    }
    written.push(path);
  };
  for (const out of outputs) {
    if (out.format === 'html') await put(out.path, renderReportHtml(doc, loadReportAssets()));
    else if (out.format === 'json') await put(out.path, `${JSON.stringify(doc, null, 2)}\n`);
    else if (out.format === 'junit') await put(out.path, junitXml(doc));
    else {
      await put(out.path, windowsCsv(doc));
      await put(recordsPathOf(out.path), recordsCsv(doc));
    }
  }
  return written;
}
