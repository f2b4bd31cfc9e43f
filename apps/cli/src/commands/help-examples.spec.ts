import { Command } from 'commander';
import { registerCommands } from '.';
import { allCommands, commandPath, HELP_EXAMPLES } from './help-examples';

function program(): Command {
  const sut = new Command('fathom').exitOverride();
  registerCommands(sut);
  return sut;
}

function helpOf(command: Command): string {
  let text = '';
  command.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  command.outputHelp();
  return text;
}

describe('fathom <cmd> --help', () => {
  const commands = allCommands(program());

  it('knows every subcommand', () => {
    expect(commands.map(commandPath)).toEqual(
      expect.arrayContaining(['run', 'validate', 'up', 'sim', 'gpu parse']),
    );
  });

  it.each(commands.map((c) => [commandPath(c), c] as const))('%s shows examples, once', (path, command) => {
    const help = helpOf(command);
    expect(help.split('\nExamples:\n')).toHaveLength(2);
    for (const example of HELP_EXAMPLES[path] ?? []) expect(help).toContain(`  $ ${example}`);
  });

  it('has no examples for a command that does not exist', () => {
    const paths = new Set(commands.map(commandPath));
    expect(Object.keys(HELP_EXAMPLES).filter((p) => !paths.has(p))).toEqual([]);
  });
});
