import 'reflect-metadata';
import { Command, CommanderError } from 'commander';
import { registerCommands } from './commands';
import { CliExit } from './cli-exit';
import { fathomVersion } from './version';

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

main(process.argv).catch((error: unknown) => {
  if (error instanceof CommanderError) {
    process.exit(error.exitCode);
  }
  process.stderr.write(`fathom: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof CliExit ? error.code : 1);
});
