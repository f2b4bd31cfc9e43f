import 'reflect-metadata';
import { Command, CommanderError } from 'commander';
import { registerCommands } from './commands';
import { CliExit } from './cli-exit';
import { fathomVersion } from './version';
import { ExitCode } from './exit-code';

/**
 * `fathom`: the command-line entry point. Subcommand names and output shapes are contracts
 * (users script them): change them only with a new name.
 */
async function main(argv: string[]): Promise<void> {
  const program = new Command('fathom')
    .description('Semantics-aware stress testing for LLM servers, RAG pipelines and agents')
    .version(fathomVersion(), '-V, --version', 'print the version of fathom')
    .showHelpAfterError()
    .exitOverride();
  registerCommands(program);
  await program.parseAsync(argv);
}

// A reader that stops early (`fathom run --help | head`) closes the pipe: stop quietly, as a
// Unix tool killed by SIGPIPE would, instead of an unhandled EPIPE with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(ExitCode.outputClosed);
    throw error;
  });
}

main(process.argv).catch((error: unknown) => {
  // A usage error (unknown option, missing argument) could not run: never the code of a failed SLO.
  if (error instanceof CommanderError) {
    process.exit(error.exitCode === 0 ? 0 : ExitCode.couldNotRun);
  }
  process.stderr.write(`fathom: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof CliExit ? error.code : ExitCode.couldNotRun);
});
