import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import type { GpuTextFormatOption } from '@fathom/gpu';
import { CliExit } from '../cli-exit';

/** Exit codes: 1 the file could not be read, 2 it could not be parsed as the format (reason in the message). */
const EXIT_UNREADABLE = 1;
const EXIT_UNPARSEABLE = 2;

/**
 * `--format`'s choices: `auto` and @fathom/gpu's GPU_TEXT_FORMATS, written out so that registering
 * the command does not load the parsers (gpu.command.spec.ts holds the two lists equal).
 */
export const GPU_FORMAT_CHOICES: readonly GpuTextFormatOption[] = [
  'auto',
  'dcgm',
  'prometheus',
  'nvidia-smi-csv',
  'nvidia-smi-xml',
];

/**
 * `fathom gpu parse FILE [--format auto|dcgm|prometheus|nvidia-smi-csv|nvidia-smi-xml]`:
 * prints one JSON object per line, `{"source","gpu","instance","metric","value","unit"}`, in the
 * normalised model of @fathom/gpu (canonical metric names carry their unit). `-` reads stdin.
 * A well-formed file with no metric Fathom knows prints nothing and says so on stderr (exit 0).
 */
export function registerGpuCommand(program: Command): void {
  const gpu = program.command('gpu').description('Read GPU and inference-server metrics');
  gpu
    .command('parse')
    .description(
      'Normalise a DCGM / Prometheus (vLLM, TGI, Triton) / nvidia-smi CSV or XML capture into JSON lines',
    )
    .argument('<file>', 'captured output; - reads stdin')
    .addOption(new Option('--format <format>', 'input format').choices(GPU_FORMAT_CHOICES).default('auto'))
    .action(async (file: string, options: { format: GpuTextFormatOption }) => {
      const text = readInput(file);
      const { GpuParseError, parseGpuTextDetailed } = await import('@fathom/gpu');
      let parsed;
      try {
        parsed = parseGpuTextDetailed(text, options.format);
      } catch (error) {
        if (error instanceof GpuParseError) {
          throw new CliExit(EXIT_UNPARSEABLE, `gpu parse: ${file}: ${error.message}`);
        }
        throw error;
      }
      if (parsed.samples.length === 0) {
        process.stderr.write(
          `fathom gpu parse: ${file}: read as ${parsed.format}, but no GPU or inference-server metric Fathom knows\n`,
        );
      }
      const lines = parsed.samples.map(({ source, gpu: gpuId, instance, metric, value, unit }) =>
        JSON.stringify({ source, gpu: gpuId, instance, metric, value, unit }),
      );
      if (lines.length) process.stdout.write(`${lines.join('\n')}\n`);
    });
}

function readInput(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliExit(EXIT_UNREADABLE, `gpu parse: unreadable: ${reason}`);
  }
}
