import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { CliExit } from '../cli-exit';

/** Exit codes: 1 the file could not be read, 2 the stream could not be parsed (kind in the message). */
const EXIT_UNREADABLE = 1;
const EXIT_UNPARSEABLE = 2;

/**
 * `fathom probe ...`: look at what a server sends without running a campaign.
 * `parse-sse FILE` (or `-` for stdin) prints one JSON line:
 * `{content, tokens, toolCalls: [{index, id, name, arguments}], finishReason, usage}`;
 * `tokens` counts logprob entries, or content chunks when the stream has no logprobs.
 * Notes on the stream (truncated, invalid UTF-8) go to stderr, prefixed by their class. A file
 * with no data payload at all (empty, or binary) prints nothing and exits 2 with its class.
 */
export function registerProbeCommand(program: Command): void {
  const probe = program.command('probe').description('Inspect what an LLM server sends');
  probe
    .command('parse-sse')
    .description('Assemble a recorded OpenAI-compatible SSE stream (or response JSON) into one JSON object')
    .argument('<file>', 'recorded response body; - reads stdin')
    .action(async (file: string) => {
      const bytes = readInput(file);
      const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
      const utf8 = isValidUtf8(bytes);
      if (bytes.length === 0)
        throw new CliExit(EXIT_UNPARSEABLE, `probe parse-sse: empty: ${file} has no bytes`);
      if (!utf8 && bytes.includes(0)) {
        throw new CliExit(
          EXIT_UNPARSEABLE,
          `probe parse-sse: binary: ${file} is not text (NUL and non-UTF-8 bytes)`,
        );
      }
      if (!utf8) process.stderr.write('fathom probe parse-sse: non-utf8: invalid bytes replaced by U+FFFD\n');
      const { parseChatStream, StreamParseError } = await import('@fathom/semantic');
      let parsed;
      try {
        parsed = parseChatStream(text);
      } catch (error) {
        if (error instanceof StreamParseError) {
          throw new CliExit(EXIT_UNPARSEABLE, `probe parse-sse: ${error.message}: ${error.payloadExcerpt}`);
        }
        throw error;
      }
      if (parsed.termination === 'empty') {
        throw new CliExit(
          EXIT_UNPARSEABLE,
          utf8
            ? `probe parse-sse: empty: no SSE data payload and no completion JSON in ${file}`
            : `probe parse-sse: binary: ${file} is not UTF-8 text and holds no SSE data payload`,
        );
      } else if (parsed.termination === 'truncated') {
        process.stderr.write('fathom probe parse-sse: truncated: no [DONE] and no finish_reason\n');
      }
      const output = {
        content: parsed.content,
        tokens: parsed.tokens,
        toolCalls: parsed.toolCalls.map(({ index, id, name, arguments: args }) => ({
          index,
          id,
          name,
          arguments: args,
        })),
        finishReason: parsed.finishReason,
        usage: parsed.usage,
      };
      process.stdout.write(`${JSON.stringify(output)}\n`);
    });
}

function readInput(file: string): Buffer {
  try {
    return readFileSync(file === '-' ? 0 : file);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliExit(EXIT_UNREADABLE, `probe parse-sse: unreadable: ${reason}`);
  }
}

function isValidUtf8(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}
