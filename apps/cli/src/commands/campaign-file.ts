import { readFile } from 'node:fs/promises';
import { parse, YAMLParseError } from 'yaml';
import { CliExit } from '../cli-exit';

/** Reads a campaign YAML (or JSON) file; a syntax error names the line and column. */
export async function readCampaignFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CliExit(2, `cannot read ${file}: ${(error as Error).message}`);
  }
  return parseCampaignText(text, file);
}

/** A campaign file's text as a plain value; anything that is not usable YAML is CliExit 2. */
export function parseCampaignText(text: string, file: string): unknown {
  try {
    return parse(text, { prettyErrors: true });
  } catch (error) {
    if (error instanceof YAMLParseError) {
      const [line, col] = error.linePos?.[0] ? [error.linePos[0].line, error.linePos[0].col] : ['?', '?'];
      throw new CliExit(2, `${file}:${line}:${col}: ${error.message.split('\n')[0]}`);
    }
    // The yaml library throws ReferenceError for an alias to no anchor (`name: *nope`) and for
    // an alias that expands too far: still a file that cannot be read as a campaign.
    throw new CliExit(2, `${file}: not a usable YAML document: ${(error as Error).message.split('\n')[0]}`);
  }
}
